// aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *,
//                ScalarType? dtype=None) -> Tensor
// args: [self, dim, keepdim, dtype, out]
//
// The sum over `dim` (None or [] = every dim) divided by the number of
// elements summed; floating dtypes only. Mean over [-1, -2] of NCHW (global
// average pooling) is one contiguous run per out element. See util/reduce.h.
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {

Error mean_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_sum_reduction(ctx, args, /*mean=*/true);
}

}  // namespace portable
}  // namespace tern
