// aten::fill.Scalar(Tensor self, Scalar value) -> Tensor
// args: [self, value, out]. out = a tensor of self's sizes and dtype, every
// element `value` converted to that dtype at load (util/fill.h); self's
// values are not read. Every dtype.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/fill.h"

namespace tern {
namespace portable {

Error fill_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", self.sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  return prepare_fill(ctx, *args[1], self.dtype, 2);
}

}  // namespace portable
}  // namespace tern
