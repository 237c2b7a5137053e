// aten::sigmoid(Tensor self) -> Tensor
// args: [self, out]. out = 1 / (1 + exp(-self)); integer and bool inputs give
// float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

struct SigmoidKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    // exp(-x) overflows to inf for very negative x, giving the right limit 0.
    unary_map<T>(args[0]->tensor, args[1]->tensor.data_as<T>(),
                 [](T x) { return T(1) / (T(1) + std::exp(-x)); });
    return Error::Ok;
  }
};

}  // namespace

Error sigmoid_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 2));
  const ScalarType result = unary_float_result(args[0]->tensor.dtype);
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "out", result));
  RunFn run = select_floating<SigmoidKernel>(result);
  if (run == nullptr) return fail_dtype(ctx, "self", args[0]->tensor.dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
