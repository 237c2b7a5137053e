// aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)
// aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)
// args: [self, dim, out]
//
// Removes the listed dims (or the one dim) that have size 1 (listed dims of
// another size stay). Negative dims count from the end; a dim listed twice is
// an error, as in torch. The data is unchanged: a byte copy.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

Error squeeze_listed(PrepareContext& ctx, Span<EValue* const> args, Span<const int64_t> dims) {
  const Tensor& self = args[0]->tensor;
  bool listed[kMaxDims] = {};
  for (int64_t d : dims) {
    int k = 0;
    TERN_CHECK_OK(normalize_dim(ctx, d, self.dim, "dim", &k));
    if (listed[k]) return ctx.fail(Error::InvalidProgram, "dim %d appears more than once", k);
    listed[k] = true;
  }
  int64_t sizes[kMaxDims];
  int n = 0;
  for (int k = 0; k < self.dim; ++k) {
    if (!(listed[k] && self.sizes[k] == 1)) sizes[n++] = self.sizes[k];
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", sizes, n));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  ctx.set_run(copy_run<2>);
  return Error::Ok;
}

}  // namespace

Error squeeze_dims_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  return squeeze_listed(ctx, args, args[1]->ints);
}

Error squeeze_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  return squeeze_listed(ctx, args, Span<const int64_t>(&args[1]->i, 1));
}

}  // namespace portable
}  // namespace tern
