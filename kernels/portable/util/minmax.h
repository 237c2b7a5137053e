// Max and min reductions: amax / amin over any set of dims, and the arg
// reductions over one dim (argmax / argmin, max.dim / min.dim).
//
// amax and amin reuse util/reduce.h's plan (reduced dims as a bitmask,
// merged into alternating kept / reduced groups); they need no scratch, since
// the running extreme has the input's type and lives in the out tensor.
//
// The arg reductions see the input as [outer, n, inner] around the reduced
// dim (dim=None for argmax / argmin flattens it: [1, numel, 1]) and keep, for
// each of the outer * inner results, the running extreme and the index where
// it was first seen:
//
//   argmax over dim 1 of [2, 3, 4]: outer 2, n 3, inner 4; out [2, 4] int64
//
// As in torch: ties give the first index; NaN is larger (max) and smaller
// (min) than every number, so NaN propagates and the first NaN's index wins.
// Reducing over an empty dim fails at load (torch raises: no identity).
//
// dtypes: float32, float64, int8, uint8, int32, int64, and bool except for
// argmax / argmin (torch rejects bool there). Values keep self's dtype;
// indices are int64.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// aten::amax / aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
//   args: [self, dim, keepdim, out]; an empty dim list reduces every dim.
Error prepare_amax_amin(PrepareContext& ctx, Span<EValue* const> args, bool max);

// aten::max / aten::min (self) -> Tensor: args [self, out], out 0-d, the
// max/min over every element (NaN propagates); an empty self is refused
// (no identity).
Error prepare_max_min_all(PrepareContext& ctx, Span<EValue* const> args, bool max);

// aten::argmax / aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
//   args: [self, dim, keepdim, out]; out is int64.
Error prepare_argmax_argmin(PrepareContext& ctx, Span<EValue* const> args, bool max);

// aten::max.dim / aten::min.dim(Tensor self, int dim, bool keepdim=False)
//     -> (Tensor values, Tensor indices)
//   args: [self, dim, keepdim, values, indices]
Error prepare_max_min_dim(PrepareContext& ctx, Span<EValue* const> args, bool max);

}  // namespace portable
}  // namespace tern
