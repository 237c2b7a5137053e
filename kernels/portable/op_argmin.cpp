// aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
// args: [self, dim, keepdim, out]
//
// int64 index of the min along dim (None: of the flattened tensor); ties give
// the first index, a NaN counts as the min. See util/minmax.h.
#include "kernels/portable/util/minmax.h"

namespace tern {
namespace portable {

Error argmin_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_argmax_argmin(ctx, args, /*max=*/false);
}

}  // namespace portable
}  // namespace tern
