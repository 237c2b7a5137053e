// aten::atan2(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out = atan2(self, other), the angle of the point
// (other, self) in [-pi, pi], broadcast; computed in the promoted dtype if
// it is floating, else in float32 (int and bool operands, as torch).
#include <cmath>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

struct Atan2Kernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, T>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                           [](T y, T x) { return std::atan2(y, x); });
    return Error::Ok;
  }
};

}  // namespace

Error atan2_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, false, &common));
  const ScalarType result = unary_float_result(common);
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", result));
  RunFn run = select_floating<Atan2Kernel>(result);
  if (run == nullptr) return fail_dtype(ctx, "out", result);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
