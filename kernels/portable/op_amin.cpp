// aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
// args: [self, dim, keepdim, out]
//
// The min over `dim` ([] = every dim); NaN propagates. See util/minmax.h.
#include "kernels/portable/util/minmax.h"

namespace tern {
namespace portable {

Error amin_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_amax_amin(ctx, args, /*max=*/false);
}

}  // namespace portable
}  // namespace tern
