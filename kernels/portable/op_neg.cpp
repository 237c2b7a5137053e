// aten::neg(Tensor self) -> Tensor
// args: [self, out]. out = -self in self's dtype: float32/float64 and the
// integer types (torch rejects bool). Integers wrap as torch's do: -INT_MIN
// is INT_MIN, and uint8 gives 256 - x.
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Neg {
  template <typename T>
  static T apply(T x) {
    if constexpr (kIsFloat<T>) {
      return -x;
    } else {
      return wrap_sub(T(0), x);
    }
  }
};

}  // namespace

Error neg_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kReal, Neg>(ctx, args);
}

}  // namespace portable
}  // namespace tern
