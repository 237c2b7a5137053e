// aten::cos(Tensor self) -> Tensor
// args: [self, out]. out = cos(self);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Cos {
  template <typename T>
  static T apply(T x) {
    return std::cos(x);
  }
};

}  // namespace

Error cos_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Cos>(ctx, args);
}

}  // namespace portable
}  // namespace tern
