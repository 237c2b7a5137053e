// aten::exp2(Tensor self) -> Tensor
// args: [self, out]. out = 2^self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Exp2 {
  template <typename T>
  static T apply(T x) {
    return std::exp2(x);
  }
};

}  // namespace

Error exp2_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Exp2>(ctx, args);
}

}  // namespace portable
}  // namespace tern
