// aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
// args: [self, dim, half_to_float, out]. out = x - max - log(sum(exp(x - max)))
// along any dim, float32/float64. The loops are shared with _softmax:
// util/elementwise.cpp.
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {

Error log_softmax_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return softmax_family_prepare(ctx, args, /*log=*/true);
}

}  // namespace portable
}  // namespace tern
