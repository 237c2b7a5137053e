// aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor
// aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out].
//
// Python's modulo (x % y): the result has the sign of other, in the promoted
// dtype (broadcasting and type promotion as add). Floating: fmod, then +other
// when the signs differ, as ATen. Integer remainder by zero is a data error
// (ExecutionFailed), as torch raises ZeroDivisionError.
#include <cmath>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct RemainderOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      if constexpr (std::is_signed<T>::value) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
      }
      T r = static_cast<T>(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else {
      T r = std::fmod(a, b);
      return (r != 0 && ((b < 0) != (r < 0))) ? r + b : r;
    }
  }
};

struct RemainderKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const ElemInput a = elem_input(*args[0]), b = elem_input(*args[1]);
    return broadcast_divide<T>("aten::remainder", args[2]->tensor, a, b, RemainderOp<T>());
  }
};

Error remainder_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  RunFn run = select_real<RemainderKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error remainder_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return remainder_prepare(ctx, args, false);
}

Error remainder_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return remainder_prepare(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
