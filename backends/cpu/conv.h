// Convolution, linear layers and depthwise convolution over NHWC float32
// activations with packed weights (backends/cpu/ukernels/ukernels.h), split
// over the method's threads.
//
//   ConvGeometry g = ...;                       // validated by the caller
//   size_t scratch = conv_scratch_bytes(g, isa); // per thread, at init
//   run_conv(g, isa, x, packed_weights, zeros, residual, y, epilogue, ctx);
//
// A linear layer is the 1x1 convolution of a [m, 1, 1, k] image. Every
// output element is computed by the same microkernel call with the same
// inputs whatever the thread count, so results do not depend on it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/isa.h"
#include "runtime/core/context.h"

namespace tern {
namespace cpu {

struct ConvGeometry {
  int64_t n, h, w, c;     // input  [n, h, w, c]
  int64_t oh, ow, oc;     // output [n, oh, ow, oc]
  int32_t kh, kw;         // kernel taps
  int32_t sh, sw;         // stride
  int32_t ph, pw;         // zero padding before (top, left)
  int32_t dh, dw;         // dilation
  bool depthwise;         // groups == c == oc: weights packed per channel
  // Floats from one pixel to the next in x and y (0: c and oc, dense). The
  // convolution reads the first c of x's (x points at the first one it
  // reads) and writes oc of y's: channel slices, for groups and concats.
  // Depthwise convolutions and residuals need dense x and y.
  int64_t x_stride, y_stride;
};

// What follows the convolution, in order: + bias (packed with the weights),
// + residual (same shape as the output, or none), then the activation.
enum class Activation : uint8_t { None, Clamp, Hardswish, Sigmoid, Tanh, Gelu, Silu };

struct Epilogue {
  Activation activation = Activation::None;
  MinMax clamp = {-__builtin_inff(), __builtin_inff()};  // Activation::Clamp (also relu, relu6)
  VactUkernel vact = nullptr;  // the ISA's sigmoid/tanh/gelu/silu (nullptr: the scalar one)
};

// Floats of packed weights: ceil(oc / 16) panels (or depthwise blocks).
size_t conv_packed_floats(const ConvGeometry& g);

// Per-thread scratch run_conv needs (row pointers).
size_t conv_scratch_bytes(const ConvGeometry& g, const Isa& isa);

// Packs canonical PyTorch weights [oc][c][kh][kw] (depthwise: [c][1][kh][kw])
// and bias [oc] (nullptr: zeros) into `packed` (conv_packed_floats floats).
// The exporter packs the same way (python/tern/backends/cpu/pack.py); this
// one serves tests and repacking.
void pack_conv_weights(const ConvGeometry& g, const float* weight, const float* bias, float* packed);

// Winograd F(2x2, 3x3) weights computed at load (cpu.fbs Conv.winograd_element):
// for canonical 3x3 kernels g [oc][c][3][3], the 16 elements of G g G^T
// (ops/conv.cpp has G), each packed as a 1x1 convolution's weights of c ->
// oc channels with zero bias (pack_conv_weights' layout), element t at
// packed + t * winograd_element_floats(c, oc). Computed in float32; the
// exporter's expanded form (double, then rounded) may differ in the last bit.
size_t winograd_element_floats(int64_t c, int64_t oc);
void pack_winograd_weights(int64_t c, int64_t oc, const float* weight, float* packed);

// Zeros run_conv reads for padding (c, or kw * c when it reads a kernel
// row's taps as one run).
size_t conv_zero_floats(const ConvGeometry& g);

// y = epilogue(conv(x) + bias + residual). `zeros` holds at least
// conv_zero_floats(g) zeros (padding reads it). residual may be nullptr.
void run_conv(const ConvGeometry& g, const Isa& isa, const float* x, const float* packed,
              const float* zeros, const float* residual, float* y, const Epilogue& ep, RunContext& ctx);

// Columns [col0, col1) of `rows` output rows c (row stride ldc): the igemm
// of a (mr row pointers a tap, ks taps of kc floats; rows past `rows` repeat
// the last) with packed weights (panel_floats apart), + res (c's layout, or
// nullptr), clamped. The main microkernel per nr columns, the tail one for a
// last lone panel: every caller makes the same calls for the same columns,
// so the same bits. col0 is a multiple of the main tile's nr.
void igemm_columns(const Isa& isa, int64_t rows, const float* const* a, int64_t kc, int64_t ks, const float* packed,
                   int64_t panel_floats, int64_t col0, int64_t col1, float* c, int64_t ldc, const float* res,
                   MinMax clamp);

// A chain of convolutions run output row by output row (cpu.fbs
// Conv.fuse_next): stages[0] a pointwise convolution (x -> t, no residual),
// stages[1] the depthwise convolution that alone reads t (t -> u) and, when
// count is 3, stages[2] a pointwise convolution that alone reads u (u -> y).
// Each thread takes one range of output rows and keeps the rows of t they
// read in a sliding window in its scratch (computed a batch of rows at a
// time), and the rows of u until the projection takes a batch of them, so
// neither t nor u is written to memory. Every output element comes from the same
// microkernel calls as run_conv stage by stage: the same bits.
struct ConvStage {
  ConvGeometry g;
  const float* packed;
  const float* residual;  // or nullptr; none on stages[0]
  Epilogue ep;
};

// The conv family's parameters (backends/cpu/ops/conv.cpp): a Conv, a
// WLinear (a 1x1 Conv of dequantized weights), a Winograd transform, or the
// head of a row chain.
struct ConvOp {
  ConvGeometry conv;   // WinogradInput/Output: n, h, w, c, oh, ow, oc and the padding
  const float* x;      // WinogradOutput: m
  const float* x2;     // residual, or nullptr
  const float* weights;
  const float* bias;   // WinogradOutput, or nullptr
  float* y;            // WinogradInput: v; a chain: its last stage's output
  int64_t numel;       // of y
  Epilogue ep;
  bool fuse_next;      // Conv: cpu.fbs Conv.fuse_next
  int chain;           // a chain's head: Convs it runs (2 or 3) ...
  const ConvStage* stages;  // ... and their stages
};

// Per-thread scratch run_conv_chain needs.
size_t conv_chain_scratch_bytes(const ConvStage* stages, int count, const Isa& isa);

// y = the last stage's output; `zeros`: conv_zero_floats of the depthwise stage.
void run_conv_chain(const ConvStage* stages, int count, const Isa& isa, const float* x, const float* zeros, float* y,
                    RunContext& ctx);

// Applies ep's activation (not a clamp) in place to n floats.
void apply_activation(const Epilogue& ep, float* v, size_t n);

}  // namespace cpu
}  // namespace tern
