// aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None)
//     -> Tensor(a)
// args: [self, size, stride, storage_offset, out]
//
// out[i_0, ..., i_{n-1}] = self's storage[storage_offset + sum_k i_k * stride[k]],
// where self's storage is its own contiguous elements (format v1 has no
// aliasing, so there is no larger storage behind self; None means offset 0).
// Strides must be non-negative (as torch), and every element read must lie
// inside self: checked at load. Any dtype.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

Error as_strided_run(RunContext& ctx, EValue* const* args) {
  int64_t first;
  memcpy(&first, ctx.state(), sizeof(first));
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[4]->tensor;
  if (out.numel == 0) return Error::Ok;
  StridedView view;
  view.dim = out.dim;
  for (int k = 0; k < out.dim; ++k) {
    view.sizes[k] = out.sizes[k];
    view.strides[k] = args[2]->ints[k];
  }
  const size_t elem = scalar_type_size(self.dtype);
  copy_strided(out.data, static_cast<const uint8_t*>(self.data) + first * elem, elem, view);
  return Error::Ok;
}

}  // namespace

Error as_strided_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::IntList));
  if (!args[3]->is_none()) TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& self = args[0]->tensor;
  Span<const int64_t> size = args[1]->ints, stride = args[2]->ints;
  if (size.size() != stride.size() || size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu entries and stride %zu (at most %d)", size.size(),
                    stride.size(), kMaxDims);
  }
  const int64_t first = args[3]->is_none() ? 0 : args[3]->i;
  int64_t last = first;  // the last element read
  bool empty = false;
  for (size_t k = 0; k < size.size(); ++k) {
    if (size[k] < 0 || stride[k] < 0) {
      return ctx.fail(Error::InvalidProgram, "size %lld and stride %lld of dim %zu must not be negative",
                      (long long)size[k], (long long)stride[k], k);
    }
    empty = empty || size[k] == 0;
    int64_t span = 0;
    if (size[k] > 0 &&
        (__builtin_mul_overflow(size[k] - 1, stride[k], &span) || __builtin_add_overflow(last, span, &last))) {
      return ctx.fail(Error::InvalidProgram, "size and stride reach past the int64 range");
    }
  }
  if (!empty && (first < 0 || last >= self.numel)) {
    return ctx.fail(Error::InvalidProgram, "reads elements %lld to %lld of self, which has %lld",
                    (long long)first, (long long)last, (long long)self.numel);
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[4]->tensor, "out", size.begin(), static_cast<int>(size.size())));
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "out", self.dtype));
  memmove(ctx.state(), &first, sizeof(first));
  ctx.set_run(as_strided_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
