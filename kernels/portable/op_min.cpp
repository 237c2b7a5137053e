// aten::min(Tensor self) -> Tensor
// args: [self, out]: torch.min(x), the min over every element, 0-d;
// NaN propagates.
//
// aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
// args: [self, dim, keepdim, values, indices]
//
// torch.min(x, dim): the min along dim and its int64 index (first on ties;
// NaN counts as the min). See util/minmax.h.
#include "kernels/portable/util/minmax.h"

namespace tern {
namespace portable {

Error min_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_max_min_all(ctx, args, /*max=*/false);
}

Error min_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_max_min_dim(ctx, args, /*max=*/false);
}

}  // namespace portable
}  // namespace tern
