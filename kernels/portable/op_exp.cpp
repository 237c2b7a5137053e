// aten::exp(Tensor self) -> Tensor
// args: [self, out]. out = e^self;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Exp {
  template <typename T>
  static T apply(T x) {
    return std::exp(x);
  }
};

}  // namespace

Error exp_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Exp>(ctx, args);
}

}  // namespace portable
}  // namespace tern
