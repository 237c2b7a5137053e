// aten::lt.Scalar(Tensor self, Scalar other) -> Tensor
// aten::lt.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self < other (util/compare.h).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct Less {
  template <typename T>
  static bool apply(T a, T b) { return a < b; }
};

}  // namespace

Error lt_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Less>(ctx, args, true);
}

Error lt_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Less>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
