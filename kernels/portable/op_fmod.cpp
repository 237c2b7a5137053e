// aten::fmod.Tensor(Tensor self, Tensor other) -> Tensor
// aten::fmod.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out].
//
// C's remainder (std::fmod, the % of integers): the result has the sign of
// self, in the promoted dtype (broadcasting and type promotion as add; no
// bool result, as torch). Floating fmod by 0 gives NaN; integer fmod by zero
// is a data error (ExecutionFailed), as torch raises ZeroDivisionError.
#include <cmath>

#include "kernels/portable/util/divide.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct FmodOp {
  static constexpr const char* kName = "aten::fmod";
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

}  // namespace

Error fmod_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return divide_prepare<FmodOp>(ctx, args, false);
}

Error fmod_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return divide_prepare<FmodOp>(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
