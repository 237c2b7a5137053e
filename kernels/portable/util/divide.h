// Shared by the kernels that divide: div with a rounding mode, remainder,
// fmod. With an integer compute type, a 0 divisor is a data error: run fails
// with ExecutionFailed before writing anything, as torch raises
// ZeroDivisionError; floating division by 0 gives inf or NaN as usual.
//
// remainder and fmod (args [self, other, out], out in the promoted dtype,
// float or integer, no bool) supply only their scalar op:
//
//   template <typename T>
//   struct FmodOp {
//     static constexpr const char* kName = "aten::fmod";
//     T operator()(T a, T b) const { ... }
//   };
//   Error fmod_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
//     return divide_prepare<FmodOp>(ctx, args, false);
//   }
#pragma once

#include <type_traits>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {

// out = op(a, b) broadcast in T (broadcast_binary<T, T>), after the integer
// division-by-zero check. `op_name` is for the log.
template <typename T, typename Op>
Error broadcast_divide(const char* op_name, const Tensor& out, const ElemInput& a,
                       const ElemInput& b, const Op& op) {
  if constexpr (std::is_integral<T>::value) {
    if (out.numel > 0 && elem_any_equal<T>(b, T(0))) {
      TERN_LOG_ERROR("%s: integer division by zero", op_name);
      return Error::ExecutionFailed;
    }
  }
  broadcast_binary<T, T>(out, a, b, op);
  return Error::Ok;
}

template <template <typename> class Op>
struct DivideKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    return broadcast_divide<T>(Op<T>::kName, args[2]->tensor, elem_input(*args[0]),
                               elem_input(*args[1]), Op<T>());
  }
};

// prepare with args [self, other, out]; other is a Scalar with scalar_other
// (the .Scalar overloads).
template <template <typename> class Op>
Error divide_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  RunFn run = select_real<DivideKernel<Op>>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
