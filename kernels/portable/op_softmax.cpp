// aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
// args: [self, dim, half_to_float, out]. Along any dim (negative counts from
// the end), float32/float64, numerically stable (the max is subtracted
// first). The loops are shared with _log_softmax: util/elementwise.cpp.
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {

Error softmax_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return softmax_family_prepare(ctx, args, /*log=*/false);
}

}  // namespace portable
}  // namespace tern
