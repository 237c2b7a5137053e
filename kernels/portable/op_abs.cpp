// aten::abs(Tensor self) -> Tensor
// args: [self, out]. out = |self| in self's dtype: float32/float64 and the
// integer types (torch has no bool abs). The most negative integer maps to
// itself (two's-complement wrap, as torch), never to undefined behaviour.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Abs {
  template <typename T>
  static T apply(T x) {
    if constexpr (kIsFloat<T>) {
      return std::fabs(x);
    } else if constexpr (std::is_unsigned<T>::value) {
      return x;
    } else {
      return x < 0 ? wrap_sub(T(0), x) : x;
    }
  }
};

}  // namespace

Error abs_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kReal, Abs>(ctx, args);
}

}  // namespace portable
}  // namespace tern
