// aten::acosh(Tensor self) -> Tensor
// args: [self, out]. out = inverse hyperbolic cosine of self (NaN below 1);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Acosh {
  template <typename T>
  static T apply(T x) {
    return std::acosh(x);
  }
};

}  // namespace

Error acosh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Acosh>(ctx, args);
}

}  // namespace portable
}  // namespace tern
