// aten::asinh(Tensor self) -> Tensor
// args: [self, out]. out = inverse hyperbolic sine of self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Asinh {
  template <typename T>
  static T apply(T x) {
    return std::asinh(x);
  }
};

}  // namespace

Error asinh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Asinh>(ctx, args);
}

}  // namespace portable
}  // namespace tern
