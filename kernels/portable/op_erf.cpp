// aten::erf(Tensor self) -> Tensor
// args: [self, out]. out = erf(self);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Erf {
  template <typename T>
  static T apply(T x) {
    return std::erf(x);
  }
};

}  // namespace

Error erf_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Erf>(ctx, args);
}

}  // namespace portable
}  // namespace tern
