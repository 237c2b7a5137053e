// aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True)
//     -> (Tensor values, Tensor indices)
// args: [self, k, dim, largest, sorted, values, indices]
//
// The k largest (smallest) values along dim, largest (smallest) first when
// sorted, and their int64 indices; k is static, so are the outs' sizes. NaN
// counts as the largest value; see util/sort.h for the order of equal values.
#include "kernels/portable/util/sort.h"

namespace tern {
namespace portable {

Error topk_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_topk(ctx, args);
}

}  // namespace portable
}  // namespace tern
