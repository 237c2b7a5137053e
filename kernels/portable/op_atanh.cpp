// aten::atanh(Tensor self) -> Tensor
// args: [self, out]. out = inverse hyperbolic tangent of self (+-inf at +-1, NaN beyond);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Atanh {
  template <typename T>
  static T apply(T x) {
    return std::atanh(x);
  }
};

}  // namespace

Error atanh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Atanh>(ctx, args);
}

}  // namespace portable
}  // namespace tern
