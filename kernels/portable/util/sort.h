// Ordering along one dim: aten::sort and aten::sort.stable (op_sort.cpp),
// aten::topk (op_topk.cpp).
//
// self is seen as [outer, n, inner] around the dim: outer * inner lines of n
// elements, `inner` apart. Each line is copied into scratch as (value, index)
// pairs, ordered there, and its first k pairs (k = n for sort) are written to
// the values and int64 indices outs, [outer, k, inner]. Lines are split over
// the threads; each thread's scratch holds one line.
//
//   sort of [2, 3, 4] along dim 1: outer 2, n 3, inner 4; outs [2, 3, 4]
//   topk(k=2) of the same:                                outs [2, 2, 4]
//
// The order is torch's: NaN is larger than every number (last ascending,
// first descending, the top of topk(largest=True)); -0.0 equals 0.0. Equal
// values come out
//   sort, stable=True: in index order;
//   sort, stable=False, and topk: as the standard algorithms that torch's CPU
//     kernels run leave them (std::sort for sort; for topk std::partial_sort
//     when k * 64 <= n, else std::nth_element and, if sorted, std::sort of
//     the first k - 1), run here on the same pairs with the same comparisons.
//     torch documents this order as unspecified; following it keeps eager
//     the oracle. (torch's x86 builds may sort float32/float64/int32/int64
//     with a vectorized quicksort instead, which orders ties its own way.)
//
// dtypes: float32, float64, int8, uint8, int16, int32, int64, and bool for
// sort (torch has no bool topk).
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
//   args: [self, dim, descending, values, indices]
// aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False)
//     -> (Tensor values, Tensor indices)
//   args: [self, stable, dim, descending, values, indices] (with_stable_arg)
Error prepare_sort(PrepareContext& ctx, Span<EValue* const> args, bool with_stable_arg);

// aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True)
//     -> (Tensor values, Tensor indices)
//   args: [self, k, dim, largest, sorted, values, indices]
Error prepare_topk(PrepareContext& ctx, Span<EValue* const> args);

}  // namespace portable
}  // namespace tern
