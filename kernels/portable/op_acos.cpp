// aten::acos(Tensor self) -> Tensor
// args: [self, out]. out = arc cosine of self (NaN outside [-1, 1]);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Acos {
  template <typename T>
  static T apply(T x) {
    return std::acos(x);
  }
};

}  // namespace

Error acos_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Acos>(ctx, args);
}

}  // namespace portable
}  // namespace tern
