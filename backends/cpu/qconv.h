// Int8 convolution, linear layers and depthwise convolution over NHWC int8
// activations with packed int8 weights (backends/cpu/ukernels/qs8.h), split
// over the method's threads: what the cpu backend runs for a quantized
// operator, dequantize -> conv / linear -> [relu] -> quantize in the graph.
//
//   pack_qs8_weights(g, weight, packed);                       // export or load
//   qs8_requant(g, packed, x_scale, x_zp, w_scales, bias, y_scale, y_zp, k, init, scale, offset);  // load
//   run_qs8_conv(conv, kernels, x, zeros, y, ctx);             // every execute()
//
// The arithmetic: acc = sum x * w over int8 (exact, int32), then per output
// channel j, y = clamp(round(acc * scale[j] + offset[j])) with
//   scale[j]  = x_scale * w_scale[j] / y_scale
//   offset[j] = bias[j] / y_scale + y_zero_point
// and acc's start init[j] = -x_zero_point * (column j's weight sum), so acc
// is sum (x - x_zero_point) * w. Padding taps read x_zero_point (the real 0).
// PyTorch computes the same in float32, dequantized; the two agree within
// one quantization step of y (rounding of the float sums).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/conv.h"
#include "backends/cpu/ukernels/qs8.h"
#include "runtime/core/context.h"

namespace tern {
namespace cpu {

struct Qs8Conv {
  ConvGeometry g;          // as for float (strides in elements = bytes); no residual
  const int8_t* packed;    // qs8_packed_bytes(g)
  const int32_t* init;     // qs8_channels(g) each, from qs8_requant
  const float* scale;
  const float* offset;
  float qmin, qmax;        // the output's range, activation included (relu: [y_zero_point, 127])
};

// Output channels rounded up to a panel (the length of init, scale, offset).
int64_t qs8_channels(const ConvGeometry& g);

// Bytes of packed weights: panels of ks * kc4 * 16 (depthwise: blocks of ks * 16).
size_t qs8_packed_bytes(const ConvGeometry& g);

// Packs int8 weights [oc][c][kh][kw] (depthwise: [c][1][kh][kw]).
void pack_qs8_weights(const ConvGeometry& g, const int8_t* weight, int8_t* packed);

// The requantization of each output channel (above), for kernel set k
// (whose igemm may read activations as unsigned: Qs8Kernels::unsigned_a).
// bias: oc floats or nullptr. init, scale, offset: qs8_channels(g) each;
// channels past oc get zeros. Returns -1, or the first output channel whose
// scale or offset (computed in double) is not finite or passes
// kQs8MaxRequant: then the outputs are unspecified and the op must be refused.
constexpr double kQs8MaxRequant = 18446744073709551616.0;  // 2^64
int64_t qs8_requant(const ConvGeometry& g, const int8_t* packed, float x_scale, int32_t x_zero_point,
                 const float* w_scales, const float* bias, float y_scale, int32_t y_zero_point, const Qs8Kernels& k,
                 int32_t* init, float* scale, float* offset);

// Per-thread scratch run_qs8_conv needs (tap pointers).
size_t qs8_conv_scratch_bytes(const ConvGeometry& g, const Qs8Kernels& k);

// The weight sum of each output channel (qs8_channels(g) of them, zeros past
// oc), from the packed weights of any geometry: what qs8_requant folds into
// init, and a dynamic linear layer's start of the
// accumulators, -x_zero_point * sum, changes with every call.
void qs8_weight_sums(const ConvGeometry& g, const int8_t* packed, int32_t* sums);

// y (float32 [m, n]) = fma(acc, scale[j], offset[j]) of an int8 linear
// layer over x [m, k] (g: [m, 1, 1, k] -> [m, 1, 1, n], 1x1); q's init,
// scale and offset as Qs8Requant's (qmin, qmax unused).
void run_qs8_linear_f32(const Qs8Conv& q, const Qs8Kernels& k, const int8_t* x, float* y, RunContext& ctx);

// y = requantized conv(x). zeros: c rounded up to a multiple of 4 bytes of x_zero_point.
void run_qs8_conv(const Qs8Conv& q, const Qs8Kernels& k, const int8_t* x, const int8_t* zeros, int8_t* y,
                  RunContext& ctx);

}  // namespace cpu
}  // namespace tern
