// aten::trunc(Tensor self) -> Tensor
// args: [self, out]. out = self rounded toward zero, in self's dtype;
// float32/float64, and integer tensors, which are copied unchanged (as
// torch); no bool.
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Trunc {
  template <typename T>
  static T apply(T x) {
    return std::trunc(x);
  }
};

}  // namespace

Error trunc_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kRealIdentityOnIntegers, Trunc>(ctx, args);
}

}  // namespace portable
}  // namespace tern
