// aten::sinh(Tensor self) -> Tensor
// args: [self, out]. out = hyperbolic sine of self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Sinh {
  template <typename T>
  static T apply(T x) {
    return std::sinh(x);
  }
};

}  // namespace

Error sinh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Sinh>(ctx, args);
}

}  // namespace portable
}  // namespace tern
