// aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor
// args: [self, dtype, out]: x.mean(), over every element, 0-d.
//
// aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *,
//                ScalarType? dtype=None) -> Tensor
// args: [self, dim, keepdim, dtype, out]
//
// The sum over `dim` (None or [] = every dim) divided by the number of
// elements summed; floating out dtypes only (an integer self needs dtype).
// Mean over [-1, -2] of NCHW (global average pooling) is one contiguous run
// per out element. See util/reduce.h.
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {

Error mean_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_fold_reduction(ctx, args, FoldArgs::kAll, Fold::kMean);
}

Error mean_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_fold_reduction(ctx, args, FoldArgs::kDimList, Fold::kMean);
}

}  // namespace portable
}  // namespace tern
