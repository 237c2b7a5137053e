// aten::repeat(Tensor self, SymInt[] repeats) -> Tensor
// args: [self, repeats, out]
//
// out = self tiled repeats[k] times along each dim k; repeats may have more
// entries than self has dims (self then gets leading size-1 dims):
//   self [2, 3], repeats [4, 1, 2] -> out [4, 2, 6]
// Any dtype. out[i] = self[i_k mod size_k ...]: each out row is the matching
// self row copied repeats[-1] times.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

Error repeat_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[2]->tensor;
  if (out.numel == 0) return Error::Ok;
  const size_t elem = scalar_type_size(self.dtype);
  if (out.dim == 0) {
    memmove(out.data, self.data, elem);
    return Error::Ok;
  }
  // self as out.dim dims: sizes and strides, leading dims of size 1
  const int lead = out.dim - self.dim;
  int64_t sizes[kMaxDims], strides[kMaxDims];
  for (int k = 0; k < out.dim; ++k) {
    sizes[k] = k < lead ? 1 : self.sizes[k - lead];
    strides[k] = k < lead ? 0 : self.stride(k - lead);
  }
  const int last = out.dim - 1;
  const size_t row = static_cast<size_t>(sizes[last]) * elem;
  const int64_t reps = out.sizes[last] / sizes[last];
  const int64_t rows = out.numel / out.sizes[last];
  const auto* src = static_cast<const uint8_t*>(self.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  int64_t pos[kMaxDims] = {}, wrapped[kMaxDims] = {};  // index in out, and in self (pos mod size)
  int64_t offset = 0;                                  // of the self row
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < reps; ++t, dst += row) memmove(dst, src + offset * elem, row);
    for (int d = last - 1; d >= 0; --d) {
      offset += strides[d];
      if (++wrapped[d] == sizes[d]) {
        wrapped[d] = 0;
        offset -= sizes[d] * strides[d];
      }
      if (++pos[d] < out.sizes[d]) break;
      pos[d] = 0;  // out.sizes[d] is a multiple of sizes[d]: wrapped[d] is 0 again
    }
  }
  return Error::Ok;
}

}  // namespace

Error repeat_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  Span<const int64_t> repeats = args[1]->ints;
  const int n = static_cast<int>(repeats.size());
  if (repeats.size() < static_cast<size_t>(self.dim) || repeats.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "repeats has %zu entries; self has %d dims (at most %d)",
                    repeats.size(), self.dim, kMaxDims);
  }
  int64_t sizes[kMaxDims];
  for (int k = 0; k < n; ++k) {
    const int64_t size = k < n - self.dim ? 1 : self.sizes[k - (n - self.dim)];
    if (repeats[k] < 0 || __builtin_mul_overflow(size, repeats[k], &sizes[k])) {
      return ctx.fail(Error::InvalidProgram, "repeats[%d] = %lld is negative or too large", k,
                      (long long)repeats[k]);
    }
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", sizes, n));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  ctx.set_run(repeat_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
