// aten::tanh(Tensor self) -> Tensor
// args: [self, out]. Integer and bool inputs give float32 (torch's
// int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

struct TanhKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    unary_map<T>(args[0]->tensor, args[1]->tensor.data_as<T>(), [](T x) { return std::tanh(x); });
    return Error::Ok;
  }
};

}  // namespace

Error tanh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 2));
  const ScalarType result = unary_float_result(args[0]->tensor.dtype);
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "out", result));
  RunFn run = select_floating<TanhKernel>(result);
  if (run == nullptr) return fail_dtype(ctx, "self", args[0]->tensor.dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
