// aten::round(Tensor self) -> Tensor
// args: [self, out]. out = self rounded to the nearest integer, ties to even
// (0.5 -> 0, 1.5 -> 2, -2.5 -> -2), as torch; in self's dtype. float32/float64,
// and integer tensors, which are copied unchanged (as torch); no bool.
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Round {
  // Independent of the floating-point environment's rounding mode (unlike
  // nearbyint), which the application owns. x - r is exact: |x - r| <= 0.5
  // and both are multiples of x's ulp.
  template <typename T>
  static T apply(T x) {
    T r = std::round(x);                                                // ties away from zero
    if (std::fabs(x - r) == T(0.5)) r = T(2) * std::round(x * T(0.5));  // a tie: the even one
    return r;
  }
};

}  // namespace

Error round_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kRealIdentityOnIntegers, Round>(ctx, args);
}

}  // namespace portable
}  // namespace tern
