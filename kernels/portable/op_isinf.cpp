// aten::isinf(Tensor self) -> Tensor
// args: [self, out]. out (bool) = self is +inf or -inf; false everywhere
// for integer and bool tensors.
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct IsInf {
  template <typename T>
  static bool apply(T x) {
    return std::isinf(x);
  }
};

}  // namespace

Error isinf_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatTest, IsInf>(ctx, args);
}

}  // namespace portable
}  // namespace tern
