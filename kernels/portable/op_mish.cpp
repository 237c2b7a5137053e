// aten::mish(Tensor self) -> Tensor
// args: [self, out]. out = self * tanh(softplus(self)) =
// self * tanh(log(1 + exp(self))), in self's dtype; float32/float64 only
// (torch has no integer mish). (Without this kernel torch.export decomposes
// mish into exp, log1p, gt, where, tanh and mul.)
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Mish {
  // For large x, exp overflows to inf and tanh(inf) = 1: out = x, the limit.
  template <typename T>
  static T apply(T x) {
    return x * std::tanh(std::log1p(std::exp(x)));
  }
};

}  // namespace

Error mish_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatOnly, Mish>(ctx, args);
}

}  // namespace portable
}  // namespace tern
