// Reductions over any set of dims of a contiguous tensor: the folds
// (sum.dim_IntList, mean, mean.dim, prod, prod.dim_int) here, and the plan
// and dims parsing that the other reductions share (amax / amin in
// util/minmax.h, any, var).
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
//   last group reduced: each out element folds contiguous runs of the input
//     (global average pooling is one run of H*W per element);
//   last group kept: each out row folds whole contiguous input rows into an
//     accumulator row in scratch, in blocks of kSumBlock columns.
// The input is read kElemChunk elements at a time, converted to the type
// the fold reads (util/elementwise.h's elem_chunk; in place when it has that
// type already), so one loop serves every input dtype. Floating sums
// accumulate in double, floating products in the out type (as torch's);
// integer sums and products accumulate in uint64 and wrap, as torch's do.
//
//   prepare: reduce_dims_mask(ctx, *args[1], self.dim, &mask);
//            reduce_plan(self, mask, &plan);
//            ctx.request_scratch(sum_scratch_bytes(plan));
//            fn = select_fold(Fold::kSum, self.dtype, out.dtype);
//   run:     reduce_plan(self, mask, &plan);   // cheap: O(dims)
//            fn(self, out.data, plan, scale, ctx.scratch());
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/copy.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// Parses a `int[1]? dim` argument against `rank`: None reduces every dim, an
// empty list every dim too (sum, mean, amax, var) or none (any.dims: pass
// empty_is_all = false); negative dims count from the end; a repeated dim
// fails.
Error reduce_dims_mask(PrepareContext& ctx, const EValue& dims, int rank, uint32_t* mask,
                       bool empty_is_all = true);

// Sizes of the result: reduced dims dropped, or kept as size 1 with keepdim.
// Returns the result's rank.
int reduce_out_sizes(const Tensor& in, uint32_t mask, bool keepdim, int64_t* sizes);

// Number of input elements folded into each out element.
int64_t reduce_count(const Tensor& in, uint32_t mask);

struct ReducePlan {
  int groups = 0;                // >= 1
  int64_t sizes[kMaxDims] = {};  // coalesced dims of the input
  int64_t strides[kMaxDims] = {};
  bool reduced[kMaxDims] = {};
};

void reduce_plan(const Tensor& in, uint32_t mask, ReducePlan* plan);

// The groups before the last, as two odometers: `kept` walks the out
// elements (or rows, when the last group is kept), `reduced` the runs or
// rows folded into each. Both wrap back to offset 0 after a full walk.
void reduce_odometers(const ReducePlan& plan, Odometer* kept, Odometer* reduced);

constexpr int64_t kSumBlock = 1024;

// Scratch bytes the plan's fold needs (0 when the last group is reduced).
size_t sum_scratch_bytes(const ReducePlan& plan);

enum class Fold { kSum, kMean, kProd };

// out[o] = scale * (fold over the reduced dims of in), converted to out's
// type. scale is 1 except for mean (1 / reduce_count); integer outs ignore it.
using FoldFn = void (*)(const Tensor& in, void* out, const ReducePlan& plan, double scale,
                        void* scratch);

// The fold from dtype `in` to dtype `out`, or nullptr if the pair is not
// supported. Supported, of float32, float64, int8, uint8, int16, int32,
// int64 and bool: any in -> float32, float64 or bool (each element != 0
// first: a bool sum is any, a bool product all); an integer or bool in ->
// any integer (wrapping). kMean folds as kSum.
FoldFn select_fold(Fold fold, ScalarType in, ScalarType out);

// The argument lists of the fold reductions.
enum class FoldArgs {
  kDimList,  // [self, int[1]? dim, bool keepdim, ScalarType? dtype, out]: sum.dim_IntList, mean.dim
  kDim,      // [self, int dim, bool keepdim, ScalarType? dtype, out]: prod.dim_int
  kAll,      // [self, ScalarType? dtype, out]: mean, prod (every dim, 0-d out)
};

// The prepare shared by the fold reductions. The out dtype is `dtype` when
// given, else self's (promoted to int64 for an integer or bool self when
// summing or multiplying). Mean divides by the number of elements summed
// (NaN when it is 0, as torch) and needs a floating out.
Error prepare_fold_reduction(PrepareContext& ctx, Span<EValue* const> args, FoldArgs shape,
                             Fold fold);

}  // namespace portable
}  // namespace tern
