// aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
// args: [self, dim, keepdim, out]
//
// int64 index of the max along dim (None: of the flattened tensor); ties give
// the first index, a NaN counts as the max. See util/minmax.h.
#include "kernels/portable/util/minmax.h"

namespace tern {
namespace portable {

Error argmax_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_argmax_argmin(ctx, args, /*max=*/true);
}

}  // namespace portable
}  // namespace tern
