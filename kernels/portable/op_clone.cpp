// aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
// args: [self, memory_format, out]
//
// A byte copy. Every tensor is contiguous in format v1, so memory_format is
// ignored.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {

Error clone_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  TERN_CHECK_OK(expect_same_shape(ctx, args[0]->tensor, args[2]->tensor, "self", "out"));
  ctx.set_run(copy_run<2>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
