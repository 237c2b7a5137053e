// aten::max(Tensor self) -> Tensor
// args: [self, out]: torch.max(x), the max over every element, 0-d;
// NaN propagates.
//
// aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
// args: [self, dim, keepdim, values, indices]
//
// torch.max(x, dim): the max along dim and its int64 index (first on ties;
// NaN counts as the max). See util/minmax.h.
#include "kernels/portable/util/minmax.h"

namespace tern {
namespace portable {

Error max_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_max_min_all(ctx, args, /*max=*/true);
}

Error max_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_max_min_dim(ctx, args, /*max=*/true);
}

}  // namespace portable
}  // namespace tern
