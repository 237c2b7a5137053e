// aten::fmod.Tensor(Tensor self, Tensor other) -> Tensor
// aten::fmod.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out].
//
// C's remainder (std::fmod, the % of integers): the result has the sign of
// self, in the promoted dtype (broadcasting and type promotion as add; no
// bool result, as torch). Floating fmod by 0 gives NaN; integer fmod by zero
// is a data error (ExecutionFailed), as torch raises ZeroDivisionError.
#include <cmath>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct FmodOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      if constexpr (std::is_signed<T>::value) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
      }
      return static_cast<T>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};

struct FmodKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const ElemInput a = elem_input(*args[0]), b = elem_input(*args[1]);
    return broadcast_divide<T>("aten::fmod", args[2]->tensor, a, b, FmodOp<T>());
  }
};

Error fmod_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  RunFn run = select_real<FmodKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error fmod_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return fmod_prepare(ctx, args, false);
}

Error fmod_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return fmod_prepare(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
