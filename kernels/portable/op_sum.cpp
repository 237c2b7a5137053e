// aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *,
//                       ScalarType? dtype=None) -> Tensor
// args: [self, dim, keepdim, dtype, out]
//
// Sums over `dim` (None or [] = every dim). Integer and bool selves sum to
// int64 unless dtype says otherwise. See util/reduce.h for the loops and the
// supported dtypes.
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {

Error sum_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_fold_reduction(ctx, args, FoldArgs::kDimList, Fold::kSum);
}

}  // namespace portable
}  // namespace tern
