// aten::le.Scalar(Tensor self, Scalar other) -> Tensor
// aten::le.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self <= other (util/compare.h).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct LessEqual {
  template <typename T>
  static bool apply(T a, T b) { return a <= b; }
};

}  // namespace

Error le_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<LessEqual>(ctx, args, true);
}

Error le_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<LessEqual>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
