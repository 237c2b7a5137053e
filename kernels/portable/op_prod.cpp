// aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor
// args: [self, dtype, out]: x.prod(), over every element, 0-d.
//
// aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *,
//                    ScalarType? dtype=None) -> Tensor
// args: [self, dim, keepdim, dtype, out]
//
// The product (1 over no elements). Integer and bool selves multiply to
// int64 unless dtype says otherwise, and wrap as torch's do; floating
// products accumulate in the out type, so they overflow where torch's do.
// See util/reduce.h for the loops and the supported dtypes.
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {

Error prod_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_fold_reduction(ctx, args, FoldArgs::kAll, Fold::kProd);
}

Error prod_dim_int_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_fold_reduction(ctx, args, FoldArgs::kDim, Fold::kProd);
}

}  // namespace portable
}  // namespace tern
