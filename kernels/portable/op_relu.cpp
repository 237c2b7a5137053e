// aten::relu(Tensor self) -> Tensor
// args: [self, out]. out = max(self, 0) in self's dtype: the floating types
// and the integer types, as eager (which refuses bool).
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Relu {
  template <typename T>
  static T apply(T x) {
    if constexpr (std::is_unsigned<T>::value) {
      return x;
    } else {
      // "< 0 ? 0 : x", not "> 0 ? x : 0": NaN fails every comparison and
      // must pass through, as in torch (relu is clamp_min(x, 0)).
      return x < T(0) ? T(0) : x;
    }
  }
};

}  // namespace

Error relu_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kReal, Relu>(ctx, args);
}

}  // namespace portable
}  // namespace tern
