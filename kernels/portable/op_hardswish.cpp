// aten::hardswish(Tensor self) -> Tensor
// args: [self, out]. out = x * min(max(x + 3, 0), 6) / 6; float32/float64.
#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

struct HardswishKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    unary_map<T>(args[0]->tensor, args[1]->tensor.data_as<T>(), [](T x) {
      using M = OpMath<T>;  // float for the 16-bit types: one rounding
      M r = M(x) + M(3);
      r = r < M(0) ? M(0) : r;
      r = r > M(6) ? M(6) : r;
      return T(M(x) * r / M(6));
    });
    return Error::Ok;
  }
};

}  // namespace

Error hardswish_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 2));
  const ScalarType dtype = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "out", dtype));
  RunFn run = select_floating<HardswishKernel>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
