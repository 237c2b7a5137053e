// Sum-reductions over any set of dims of a contiguous tensor (sum.dim_IntList,
// mean.dim).
//
// The reduced dims are a bitmask over the input's dims (bit d set: dim d is
// reduced). A plan drops size-1 dims and merges neighbours of the same kind,
// leaving alternating groups of kept and reduced dims:
//
//   mean over [-1, -2] of [N, C, H, W]  ->  [N*C kept, H*W reduced]
//   sum over [0] of [R, K]              ->  [R reduced, K kept]
//   sum over [0, 2] of [A, B, C, D]     ->  [A reduced, B kept, C reduced, D kept]
//
// Two loops cover every plan:
//   last group reduced: each out element sums contiguous runs of the input
//     (global average pooling is one run of H*W per element);
//   last group kept: each out row adds whole contiguous input rows into an
//     accumulator row in scratch, in blocks of kSumBlock columns.
// Floating sums accumulate in double, integer sums in int64.
//
//   prepare: reduce_dims_mask(ctx, *args[1], self.dim, &mask);
//            reduce_plan(self, mask, &plan);
//            ctx.request_scratch(sum_scratch_bytes(plan));
//            fn = select_sum(self.dtype, out.dtype);
//   run:     reduce_plan(self, mask, &plan);   // cheap: O(dims)
//            fn(self.data, out.data, plan, scale, ctx.scratch());
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// Parses a `int[1]? dim` argument against `rank`: None or an empty list
// reduces every dim; negative dims count from the end; a repeated dim fails.
Error reduce_dims_mask(PrepareContext& ctx, const EValue& dims, int rank, uint32_t* mask);

// Sizes of the result: reduced dims dropped, or kept as size 1 with keepdim.
// Returns the result's rank.
int reduce_out_sizes(const Tensor& in, uint32_t mask, bool keepdim, int64_t* sizes);

// Number of input elements summed into each out element.
int64_t reduce_count(const Tensor& in, uint32_t mask);

struct ReducePlan {
  int groups = 0;                // >= 1
  int64_t sizes[kMaxDims] = {};  // coalesced dims of the input
  int64_t strides[kMaxDims] = {};
  bool reduced[kMaxDims] = {};
};

void reduce_plan(const Tensor& in, uint32_t mask, ReducePlan* plan);

constexpr int64_t kSumBlock = 1024;

// Scratch bytes the plan's sum needs (0 when the last group is reduced).
size_t sum_scratch_bytes(const ReducePlan& plan);

// out[o] = scale * (sum over the reduced dims of in), converted to out's type.
// scale is 1 for sum, 1 / reduce_count for mean; integer outs ignore it.
using SumFn = void (*)(const void* in, void* out, const ReducePlan& plan, double scale,
                       void* scratch);

// The sum from dtype `in` to dtype `out`, or nullptr if the pair is not
// supported. Supported: float32 -> float32, float64 -> float64,
// float32 -> float64, {int64, int32, int8, uint8, bool} -> int64, int32 -> int32.
SumFn select_sum(ScalarType in, ScalarType out);

// The prepare shared by sum.dim_IntList and mean.dim:
//   (Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
//   args: [self, dim, keepdim, dtype, out]
// The out dtype is `dtype` when given, else self's (promoted to int64 for an
// integer or bool self when summing). `mean` divides by the number of
// elements summed (NaN when it is 0, as torch) and needs a floating out.
Error prepare_sum_reduction(PrepareContext& ctx, Span<EValue* const> args, bool mean);

}  // namespace portable
}  // namespace tern
