// aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor
// aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out].
//
// Python's modulo (x % y): the result has the sign of other, in the promoted
// dtype (broadcasting and type promotion as add). Floating: fmod, then +other
// when the signs differ, as ATen. Integer remainder by zero is a data error
// (ExecutionFailed), as torch raises ZeroDivisionError.
#include <cmath>

#include "kernels/portable/util/divide.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct RemainderOp {
  static constexpr const char* kName = "aten::remainder";
  T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      if constexpr (std::is_signed<T>::value) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
      }
      T r = static_cast<T>(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else {
      using M = OpMath<T>;  // float for the 16-bit types: one rounding
      const M r = std::fmod(M(a), M(b));
      return T((r != 0 && ((b < 0) != (r < 0))) ? r + M(b) : r);
    }
  }
};

}  // namespace

Error remainder_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return divide_prepare<RemainderOp>(ctx, args, false);
}

Error remainder_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return divide_prepare<RemainderOp>(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
