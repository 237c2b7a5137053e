// aten::tan(Tensor self) -> Tensor
// args: [self, out]. out = tangent of self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Tan {
  template <typename T>
  static T apply(T x) {
    return std::tan(x);
  }
};

}  // namespace

Error tan_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Tan>(ctx, args);
}

}  // namespace portable
}  // namespace tern
