// aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None,
//                     SymInt step=1) -> Tensor
// args: [self, src, dim, start, end, step, out]
//
// out = self, then out[..., start:end:step, ...] = src along dim. start and
// end may be None, negative or out of range (clamped), as for aten::slice;
// step must be positive. src has the slice's shape and any dtype (converted
// to self's, as torch does). Any dtype.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {

Error slice_scatter_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Int));
  const Tensor& self = args[0]->tensor;
  if (self.dim == 0) return ctx.fail(Error::InvalidProgram, "cannot slice a 0-d tensor");
  SliceScatterState st{};
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[2]->i, self.dim, "dim", &dim));
  st.dim = dim;
  st.step = args[5]->i;
  int64_t sizes[kMaxDims];
  for (int k = 0; k < self.dim; ++k) sizes[k] = self.sizes[k];
  TERN_CHECK_OK(slice_bounds(ctx, *args[3], *args[4], &st.step, self.sizes[dim], &st.start, &sizes[dim]));
  st.count = sizes[dim];
  TERN_CHECK_OK(expect_slice_scatter(ctx, args, 6, sizes, self.dim, &st));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(slice_scatter_run<6>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
