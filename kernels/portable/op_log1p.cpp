// aten::log1p(Tensor self) -> Tensor
// args: [self, out]. out = log(1 + self), accurate near 0; integer and bool
// inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Log1p {
  template <typename T>
  static T apply(T x) {
    return std::log1p(x);
  }
};

}  // namespace

Error log1p_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Log1p>(ctx, args);
}

}  // namespace portable
}  // namespace tern
