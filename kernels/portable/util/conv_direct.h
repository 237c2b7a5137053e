// Direct (loop-nest) convolution: what aten::convolution's float32 GEMM
// paths do not cover, i.e. float64 and int64 (the dtypes besides the floating
// ones that PyTorch's CPU convolution takes in every form), and float32 (so
// float16 / bfloat16 staged through it) transposed or 3-d convolution.
//
// 1 to 3 spatial dims, any groups, stride, padding, dilation, and transposed
// convolution with output_padding. Every output element is a gather over the
// input channels of its group and the kernel taps:
//
//   forward     out[n, o, y] = bias[o] + sum_{ci, t} x[n, g*cg + ci, y*s - p + t*d]
//                                                     * w[o, ci, t]
//   transposed  out[n, o, y] = bias[o] + sum_{ci, t} x[n, g*cg + ci, i] * w[g*cg + ci, o % ocg, t]
//               where i*s - p + t*d = y
//
// per spatial dim (y, t, i, s, p, d), g = o / ocg the output channel's group,
// cg and ocg the input and output channels per group; taps that land
// outside the input (the zero padding) add nothing. int64 sums wrap modulo
// 2^64 (computed in uint64_t), as torch's do in practice.
//
// Usage (aten::convolution's prepare, after the argument tags are checked):
//   return conv_direct_prepare(ctx, args);   // picks the run function
//
// Threads: the n * oc output planes are split over the threads; a plane's
// values do not depend on the split. No scratch.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// args as aten::convolution: [input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups, out], the tags of input, weight,
// transposed, groups and out and bias (Tensor or None) already checked.
// input is float32, float64 or int64; checks the rest.
Error conv_direct_prepare(PrepareContext& ctx, Span<EValue* const> args);

}  // namespace portable
}  // namespace tern
