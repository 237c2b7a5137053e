// aten::ge.Scalar(Tensor self, Scalar other) -> Tensor
// aten::ge.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self >= other (util/compare.h).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct GreaterEqual {
  template <typename T>
  static bool apply(T a, T b) { return a >= b; }
};

}  // namespace

Error ge_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<GreaterEqual>(ctx, args, true);
}

Error ge_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<GreaterEqual>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
