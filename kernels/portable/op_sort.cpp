// aten::sort(Tensor self, int dim=-1, bool descending=False)
//     -> (Tensor values, Tensor indices)
// args: [self, dim, descending, values, indices]
//
// aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False)
//     -> (Tensor values, Tensor indices)
// args: [self, stable, dim, descending, values, indices]
//
// self sorted along dim, and the int64 index of each value in self. NaN sorts
// as the largest value; see util/sort.h for the order of equal values.
#include "kernels/portable/util/sort.h"

namespace tern {
namespace portable {

Error sort_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_sort(ctx, args, /*with_stable_arg=*/false);
}

Error sort_stable_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_sort(ctx, args, /*with_stable_arg=*/true);
}

}  // namespace portable
}  // namespace tern
