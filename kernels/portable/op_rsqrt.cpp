// aten::rsqrt(Tensor self) -> Tensor
// args: [self, out]. out = 1 / sqrt(self); rsqrt(0) = inf (IEEE division, as torch);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Rsqrt {
  template <typename T>
  static T apply(T x) {
    return T(1) / std::sqrt(x);
  }
};

}  // namespace

Error rsqrt_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Rsqrt>(ctx, args);
}

}  // namespace portable
}  // namespace tern
