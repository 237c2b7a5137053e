// aten::cosh(Tensor self) -> Tensor
// args: [self, out]. out = hyperbolic cosine of self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Cosh {
  template <typename T>
  static T apply(T x) {
    return std::cosh(x);
  }
};

}  // namespace

Error cosh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Cosh>(ctx, args);
}

}  // namespace portable
}  // namespace tern
