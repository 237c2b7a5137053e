// aten::isnan(Tensor self) -> Tensor
// args: [self, out]. out (bool) = self is NaN; false everywhere for integer
// and bool tensors.
#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct IsNan {
  template <typename T>
  static bool apply(T x) {
    return x != x;
  }
};

}  // namespace

Error isnan_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatTest, IsNan>(ctx, args);
}

}  // namespace portable
}  // namespace tern
