// aten::expm1(Tensor self) -> Tensor
// args: [self, out]. out = e^self - 1, accurate near 0 (where exp(self) - 1
// loses its digits); integer and bool inputs give float32 (torch's
// int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Expm1 {
  template <typename T>
  static T apply(T x) {
    return std::expm1(x);
  }
};

}  // namespace

Error expm1_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Expm1>(ctx, args);
}

}  // namespace portable
}  // namespace tern
