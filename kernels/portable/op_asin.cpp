// aten::asin(Tensor self) -> Tensor
// args: [self, out]. out = arc sine of self (NaN outside [-1, 1]);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Asin {
  template <typename T>
  static T apply(T x) {
    return std::asin(x);
  }
};

}  // namespace

Error asin_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Asin>(ctx, args);
}

}  // namespace portable
}  // namespace tern
