// aten::alias(Tensor(a) self) -> Tensor(a)
// args: [self, out]
//
// Format v1 has no aliasing: out is a byte copy of self. (The exporter drops
// the aliases it can, see python/tern/passes/remove_noops.py; those left
// read a model input or feed an output.)
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {

Error alias_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(expect_same_shape(ctx, args[1]->tensor, args[0]->tensor, "out", "self"));
  ctx.set_run(copy_run<1>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
