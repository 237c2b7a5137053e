// aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
// args: [self, size, implicit, out]
//
// Broadcasts self to `size`: new leading dims, and dims of size 1 repeated.
// A -1 in size keeps self's size for that dim. Read through stride 0 on the
// repeated dims (see copy_strided).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

Error expand_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[3]->tensor;
  const int lead = out.dim - self.dim;
  StridedView view;
  view.dim = out.dim;
  for (int k = 0; k < out.dim; ++k) {
    view.sizes[k] = out.sizes[k];
    const int j = k - lead;
    view.strides[k] = (j < 0 || self.sizes[j] == 1) ? 0 : self.stride(j);
  }
  copy_strided(out.data, self.data, scalar_type_size(self.dtype), view);
  return Error::Ok;
}

// The expanded sizes of `self` for `size` (same length as size).
Error expanded_sizes(PrepareContext& ctx, const Tensor& self, Span<const int64_t> size,
                     int64_t* sizes) {
  if (size.size() < static_cast<size_t>(self.dim) || size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu dims, self has %d (at most %d)",
                    size.size(), self.dim, kMaxDims);
  }
  const int lead = static_cast<int>(size.size()) - self.dim;
  for (int k = 0; k < static_cast<int>(size.size()); ++k) {
    const int64_t s = size[k];
    const int j = k - lead;
    if (j < 0) {
      if (s < 0) return ctx.fail(Error::InvalidProgram, "size[%d] = %lld in a new dim", k, (long long)s);
      sizes[k] = s;
    } else if (s == -1 || s == self.sizes[j]) {
      sizes[k] = self.sizes[j];
    } else if (self.sizes[j] == 1 && s >= 0) {
      sizes[k] = s;
    } else {
      return ctx.fail(Error::InvalidProgram, "cannot expand dim %d of size %lld to %lld", j,
                      (long long)self.sizes[j], (long long)s);
    }
  }
  return Error::Ok;
}

}  // namespace

Error expand_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  int64_t sizes[kMaxDims];
  TERN_CHECK_OK(expanded_sizes(ctx, self, args[1]->ints, sizes));
  TERN_CHECK_OK(expect_sizes(ctx, args[3]->tensor, "out", sizes,
                             static_cast<int>(args[1]->ints.size())));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", self.dtype));
  ctx.set_run(expand_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
