// aten::gt.Scalar(Tensor self, Scalar other) -> Tensor
// aten::gt.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self > other (util/compare.h).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct Greater {
  template <typename T>
  static bool apply(T a, T b) { return a > b; }
};

}  // namespace

Error gt_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Greater>(ctx, args, true);
}

Error gt_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Greater>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
