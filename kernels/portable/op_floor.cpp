// aten::floor(Tensor self) -> Tensor
// args: [self, out]. out = floor(self) in self's dtype; float32/float64, and
// integer tensors, which are copied unchanged (as torch); no bool.
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Floor {
  template <typename T>
  static T apply(T x) {
    return std::floor(x);
  }
};

}  // namespace

Error floor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kRealIdentityOnIntegers, Floor>(ctx, args);
}

}  // namespace portable
}  // namespace tern
