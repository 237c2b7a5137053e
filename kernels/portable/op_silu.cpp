// aten::silu(Tensor self) -> Tensor
// args: [self, out]. out = self * sigmoid(self) = self / (1 + exp(-self)), in
// self's dtype; float32/float64 only (torch has no integer silu).
// (Without this kernel torch.export decomposes silu into sigmoid and mul.)
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Silu {
  // exp(-x) overflows to inf for very negative x, giving the right limit -0.
  template <typename T>
  static T apply(T x) {
    return x / (T(1) + std::exp(-x));
  }
};

}  // namespace

Error silu_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatOnly, Silu>(ctx, args);
}

}  // namespace portable
}  // namespace tern
