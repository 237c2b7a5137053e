// Shared body of the bitwise kernels (bitwise_and, bitwise_or, bitwise_xor;
// .Tensor and .Scalar overloads): args [self, other, out]; out = self OP
// other, broadcast, in torch.result_type(self, other), which must be an
// integral type or bool (a floating operand is refused, as torch does). An
// Int Scalar wider than the result wraps to it (uint8 & 300 is uint8 & 44),
// as torch converts it.
//
//   struct And {
//     template <typename T>
//     static T apply(T a, T b) { return static_cast<T>(a & b); }
//   };
//   Error bitwise_and_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
//     return bitwise_prepare<And>(ctx, args, false);
//   }
#pragma once

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {

template <typename Op>
struct BitwiseKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, T>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                           [](T a, T b) { return Op::apply(a, b); });
    return Error::Ok;
  }
};

template <typename Op>
Error bitwise_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  if (scalar_type_is_floating(common)) {
    return ctx.fail(Error::InvalidProgram,
                    "bitwise ops take integer or bool operands, self and other promote to %s",
                    scalar_type_name(common));
  }
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  RunFn run = select_integral<BitwiseKernel<Op>>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
