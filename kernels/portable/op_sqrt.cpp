// aten::sqrt(Tensor self) -> Tensor
// args: [self, out]. out = sqrt(self); sqrt(x < 0) = NaN, sqrt(-0) = -0;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Sqrt {
  template <typename T>
  static T apply(T x) {
    return std::sqrt(x);
  }
};

}  // namespace

Error sqrt_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Sqrt>(ctx, args);
}

}  // namespace portable
}  // namespace tern
