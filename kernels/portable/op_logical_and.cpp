// aten::logical_and(Tensor self, Tensor other) -> Tensor
// aten::logical_or(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = (self != 0) and/or (other != 0),
// broadcast (util/compare.h; NaN is nonzero, so true).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct And {
  template <typename T>
  static bool apply(T a, T b) { return a != T(0) && b != T(0); }
};

struct Or {
  template <typename T>
  static bool apply(T a, T b) { return a != T(0) || b != T(0); }
};

}  // namespace

Error logical_and_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<And>(ctx, args, false);
}

Error logical_or_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Or>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
