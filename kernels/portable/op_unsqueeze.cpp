// aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)
// args: [self, dim, out]
//
// Inserts a dim of size 1 at `dim` (in [-(rank + 1), rank]). The data is
// unchanged: a byte copy.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {

Error unsqueeze_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  if (self.dim >= kMaxDims) {
    return ctx.fail(Error::InvalidProgram, "self has %d dims, out would exceed %d", self.dim,
                    kMaxDims);
  }
  int d = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, self.dim + 1, "dim", &d));
  int64_t sizes[kMaxDims];
  for (int k = 0, j = 0; k <= self.dim; ++k) sizes[k] = k == d ? 1 : self.sizes[j++];
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", sizes, self.dim + 1));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  ctx.set_run(copy_run<2>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
