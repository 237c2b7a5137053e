// aten::logical_xor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = (self != 0) != (other != 0), any
// dtypes, broadcast (util/compare.h; NaN is nonzero, so true).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct Xor {
  template <typename T>
  static bool apply(T a, T b) { return (a != T(0)) != (b != T(0)); }
};

}  // namespace

Error logical_xor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Xor>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
