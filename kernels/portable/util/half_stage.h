// Running a float32-only kernel on float16 / bfloat16 tensors by staging them
// through float32 (the heavy ops: mm, addmm, bmm, convolution, attention,
// pooling, normalization).
//
// Why: these kernels are built around float32 (the SGEMM in gemm.h, packed
// panels, per-thread scratch layouts). PyTorch's CPU kernels compute these ops
// in float32 for the 16-bit types too ("opmath": float accumulators, one
// rounding of the result), so converting the 16-bit inputs to float32, running
// the float32 kernel and rounding its outputs once gives the same contract as
// a native 16-bit kernel, with one copy of the code. The cost is the
// conversions and float32 copies of the staged tensors in persistent memory
// (allocated once at prepare; nothing is allocated at run).
//
//   Error convolution_prepare(PrepareContext& ctx, Span<EValue* const> args) {
//     return prepare_staged(ctx, args, convolution_prepare_f32);
//   }
//
// prepare_staged calls `inner` directly when no Tensor argument is float16 or
// bfloat16. Otherwise it gives `inner` the same arguments with every 16-bit
// Tensor replaced by a float32 Tensor of the same sizes (a buffer of its
// own), keeps what inner chose (run function, state, scratch), and runs, at
// every execute: convert the 16-bit inputs into their buffers, inner's run,
// round the buffers of the 16-bit outs back into the outs. Only direct
// Tensor arguments are staged (not items of tensor lists).
#pragma once

#include "runtime/core/context.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// num_outputs: the last num_outputs arguments are the op's outs (as in ops.def).
Error prepare_staged(PrepareContext& ctx, Span<EValue* const> args, PrepareFn inner,
                     size_t num_outputs);

}  // namespace portable
}  // namespace tern
