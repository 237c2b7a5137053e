// aten::atan(Tensor self) -> Tensor
// args: [self, out]. out = arc tangent of self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Atan {
  template <typename T>
  static T apply(T x) {
    return std::atan(x);
  }
};

}  // namespace

Error atan_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Atan>(ctx, args);
}

}  // namespace portable
}  // namespace tern
