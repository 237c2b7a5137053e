// aten::ne.Scalar(Tensor self, Scalar other) -> Tensor
// aten::ne.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self != other (util/compare.h).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct NotEqual {
  template <typename T>
  static bool apply(T a, T b) { return a != b; }
};

}  // namespace

Error ne_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<NotEqual>(ctx, args, true);
}

Error ne_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<NotEqual>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
