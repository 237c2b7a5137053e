// aten::reciprocal(Tensor self) -> Tensor
// args: [self, out]. out = 1 / self; 1 / 0 = inf (IEEE division, as torch);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Reciprocal {
  template <typename T>
  static T apply(T x) {
    return T(1) / x;
  }
};

}  // namespace

Error reciprocal_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Reciprocal>(ctx, args);
}

}  // namespace portable
}  // namespace tern
