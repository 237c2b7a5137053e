// aten::sin(Tensor self) -> Tensor
// args: [self, out]. out = sin(self);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Sin {
  template <typename T>
  static T apply(T x) {
    return std::sin(x);
  }
};

}  // namespace

Error sin_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Sin>(ctx, args);
}

}  // namespace portable
}  // namespace tern
