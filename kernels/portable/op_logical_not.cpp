// aten::logical_not(Tensor self) -> Tensor
// args: [self, out]. out (bool) = (self == 0), for any supported dtype of
// self (NaN is nonzero, so logical_not(NaN) is false).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

Error logical_not_run(RunContext&, EValue* const* args) {
  unary_map<bool>(args[0]->tensor, args[1]->tensor.data_as<bool>(), [](bool x) { return !x; });
  return Error::Ok;
}

}  // namespace

Error logical_not_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 2));
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "out", ScalarType::Bool));
  ctx.set_run(logical_not_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
