// aten::eq.Scalar(Tensor self, Scalar other) -> Tensor
// aten::eq.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self == other (util/compare.h).
#include "kernels/portable/util/compare.h"

namespace tern {
namespace portable {
namespace {

struct Equal {
  template <typename T>
  static bool apply(T a, T b) { return a == b; }
};

}  // namespace

Error eq_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Equal>(ctx, args, true);
}

Error eq_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return compare_prepare<Equal>(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
