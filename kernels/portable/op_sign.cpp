// aten::sign(Tensor self) -> Tensor
// args: [self, out]. out = -1, 0 or 1 by the sign of self, in self's dtype;
// every dtype: bool is its own sign, unsigned integers give 0 or 1. As in
// torch, NaN and -0.0 give +0.0 (both comparisons are false).
#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Sign {
  template <typename T>
  static T apply(T x) {
    if constexpr (std::is_same_v<T, bool>) {
      return x;
    } else {
      return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
    }
  }
};

}  // namespace

Error sign_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kAll, Sign>(ctx, args);
}

}  // namespace portable
}  // namespace tern
