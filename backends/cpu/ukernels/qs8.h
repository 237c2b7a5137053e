// The cpu backend's int8 microkernels (qs8: signed 8-bit activations and
// weights, int32 accumulators, requantized to int8 in the same call), one
// file per ISA like the float ones (ukernels.h): scalar (always built, the
// reference), avx2, avx512vnni (AVX-512 with VNNI's 4-way byte dot product),
// amx (the GEMM on AMX-INT8 tiles, the rest avx512vnni's),
// neondot (Armv8.2 SDOT igemm; NEON depthwise, quantize, add/mul, pooling).
//
// Packed weights, in one layout for every ISA (backends/cpu/qconv.cpp packs):
//   GEMM / convolution, N outputs, ks taps of kc inputs:
//     ceil(N / 16) panels; panel p = [ks][kc4 / 4][16 columns][4 int8],
//     kc4 = kc rounded up to a multiple of 4 (a column's 4 consecutive
//     inputs side by side, as VNNI's vpdpbusd reads them); zero past N and kc.
//     A panel is ks * kc4 * 16 bytes.
//   depthwise, C channels, ks taps: ceil(C / 16) blocks; block b = [ks][16 int8].
//
// Requantization, per output column j (Qs8Requant):
//   y = clamp(nearbyint(fma(float(acc), scale[j], offset[j])), qmin, qmax)
//   acc = init[j] + sum over taps t and inputs c of a[t][c] * w[t][c][j]
// fma and round-half-even in every ISA, so every ISA writes the same bytes.
// init carries the zero-point correction (-x_zero_point * the column's
// weight sum) and, for kernels that read a + 128 as unsigned (VNNI), also
// -128 * the weight sum: Qs8Kernels::unsigned_a says which.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernel_names.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

struct Qs8Requant {
  const int32_t* init;  // per column, from the call's first
  const float* scale;
  const float* offset;
  float qmin, qmax;     // integers in [-128, 127]
};

// C[i][j] = requant(init[j] + sum_{t < ks} sum_{c < kc} A[t][i][c] * W[t][c][j])
//   i < mr <= MR rows, j < nc <= NR columns (NR / 16 panels, the next at
//   w + ks * kc4 * 16; rq's arrays hold NR columns)
//   a: ks * MR row pointers, a[t * MR + i] -> kc int8; rows mr..MR-1 must point
//      somewhere readable too (callers repeat the last row)
//   c: row i at c + i * c_stride (bytes)
using Qs8IgemmUkernel = void (*)(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                 const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq);

// The same GEMM with float32 output, for a dynamically quantized linear layer:
// C[i][j] = fma(float(acc), scale[j], offset[j]) (offset: the bias), no clamp.
using Qs8IgemmF32Ukernel = void (*)(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                    const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq);

// Depthwise: out[p][j] = requant(init[j] + sum_{t < ks} in[p * ks + t][j] * w[t][j])
// for `pixels` pixels and all `channels` channels; w: packed depthwise
// weights; rq's arrays cover every channel; out: pixel p at out + p * out_stride.
using Qs8DwconvUkernel = void (*)(size_t channels, size_t pixels, size_t ks, const int8_t* const* in,
                                  const int8_t* w, int8_t* out, size_t out_stride, const Qs8Requant& rq);

// Elementwise int8 ops, computed as PyTorch's reference computes them, in
// float32 (round half to even; a NaN becomes qmin):
//   quantize: y[i] = clamp(round(x[i] * inv_scale) + zero_point, qmin, qmax)
//   binary:   fa = (a[i] - a_zero) * a_scale, fb likewise,
//             y[i] = clamp(round((fa + fb, or fa * fb) * y_inv_scale) + y_zero, qmin, qmax)
struct Qs8QuantizeParams {
  float inv_scale, zero_point, qmin, qmax;
};
struct Qs8BinaryParams {
  float a_scale, a_zero, b_scale, b_zero, y_inv_scale, y_zero, qmin, qmax;
  bool mul;  // else add
};
using Qs8QuantizeUkernel = void (*)(size_t n, const float* x, int8_t* y, const Qs8QuantizeParams& p);
using Qs8BinaryUkernel = void (*)(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p);
// int8 NHWC pooling over `channels` channels, PyTorch's dequantize -> pool ->
// quantize computed as PyTorch computes it, in float32. Per output pixel p,
// over its taps t < ks (in[p * ks + t] -> c int8), f_t = (float(x_t) - x_zero) * x_scale:
//   count == nullptr (max): y = quantize(max_t f_t), computed as
//     m = max_t x_t, y = clamp(round((float(m) - x_zero) * x_scale * y_inv_scale) + y_zero, qmin, qmax)
//     (the same float32 result: the dequantization is increasing)
//   else (average): s = f_0 + f_1 + ... in tap order (float32, as
//     avg_pool2d's CPU kernel sums), y = clamp(round(s / count[p] * y_inv_scale) + y_zero, qmin, qmax)
// Rounding half to even; taps in window order (row by row). An integer sum
// would round the many exact halfway values (a window of 2 or 4 taps, the
// same scale in and out) differently from PyTorch.
// out: pixel p at out + p * out_stride. Callers point a max's padding taps at
// one of the pixel's own taps and an average's at x_zero bytes (f = +0).
struct Qs8PoolParams {
  float x_scale, x_zero, y_inv_scale, y_zero, qmin, qmax;
};
using Qs8PoolUkernel = void (*)(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const float* count,
                                int8_t* out, size_t out_stride, const Qs8PoolParams& p);
// The least and greatest of n >= 1 floats, NaNs skipped (a dynamic
// quantization's range): *lo and *hi start as x[0].
using F32MinMaxUkernel = void (*)(size_t n, const float* x, float* lo, float* hi);
// Before and after a thread's igemm calls of one op (Qs8Kernels::begin, end).
using Qs8BeginUkernel = void (*)(size_t kc);
using Qs8EndUkernel = void (*)();

struct Qs8Kernels {
  const char* name;
  int mr;                         // rows per igemm call
  int panels;                     // the most panels (16 columns each) one igemm call takes: 1 to 4
  Qs8IgemmUkernel igemm[4];       // igemm[p - 1] takes p panels (p <= panels; the rest nullptr)
  Qs8IgemmF32Ukernel igemm_f32[4];
  bool unsigned_a;  // igemm reads a + 128 as uint8 (init must carry -128 * weight sums)
  Qs8DwconvUkernel dwconv;
  Qs8QuantizeUkernel quantize;
  Qs8BinaryUkernel binary;
  F32MinMaxUkernel minmax;
  Qs8PoolUkernel pool;
  // A thread calls begin(kc) before its first igemm call of an op (kc as
  // those calls pass it) and end() after its last (amx: load the tile
  // configuration, release the tiles); nullptr for none.
  Qs8BeginUkernel begin;
  Qs8EndUkernel end;
  KernelNames<15> names;  // each kernel above by its field: "igemm[0]" -> "qs8_igemm_ukernel_3x16__avx2"
};

// The two helpers below are compiled into files of every ISA: an unnamed
// namespace gives each file its own copy, built with its flags
// (ukernels/common/avx512.h says why).
namespace {

// Inputs k..k+3 of a row of kc int8 as one int32 (4 bytes, little-endian),
// zeros past kc: the igemm kernels broadcast it to every lane. The last 1 to
// 3 inputs are read byte by byte (no memcpy of a variable size, no read past kc).
inline int32_t qs8_load4(const int8_t* x, size_t k, size_t kc) {
  if (k + 4 <= kc) {
    int32_t v;
    __builtin_memcpy(&v, x + k, 4);
    return v;
  }
  uint32_t u = uint8_t(x[k]);
  if (k + 1 < kc) u |= uint32_t(uint8_t(x[k + 1])) << 8;
  if (k + 2 < kc) u |= uint32_t(uint8_t(x[k + 2])) << 16;
  return int32_t(u);
}

// The one scalar requantization (the vector ones compute the same). A NaN
// compares false: it becomes qmin, as x86's max(v, qmin) and NEON's
// maxnm(v, qmin) make it (a load-time check keeps NaN out of a QConv's
// requantization; the clamp still never converts one).
inline int8_t qs8_requant(int32_t acc, float scale, float offset, float qmin, float qmax) {
  float v = __builtin_nearbyintf(__builtin_fmaf(static_cast<float>(acc), scale, offset));
  v = v > qmin ? v : qmin;
  v = v < qmax ? v : qmax;
  return static_cast<int8_t>(v);
}

}  // namespace

// The kernels, declared through the types above (UkernelFn, ukernels.h)
// and defined in ukernels/<isa>/, tiles rows x columns: the igemm kernels
// take igemm[p - 1] of Qs8Kernels for p panels of 16 columns.
UkernelFn<Qs8IgemmUkernel> qs8_igemm_ukernel_4x16__scalar;
UkernelFn<Qs8IgemmF32Ukernel> qs8_igemm_f32_ukernel_4x16__scalar;
UkernelFn<Qs8DwconvUkernel> qs8_dwconv_ukernel__scalar;
UkernelFn<Qs8QuantizeUkernel> qs8_quantize_ukernel__scalar;
UkernelFn<Qs8BinaryUkernel> qs8_binary_ukernel__scalar;
UkernelFn<F32MinMaxUkernel> f32_minmax_ukernel__scalar;
UkernelFn<Qs8PoolUkernel> qs8_pool_ukernel__scalar;

UkernelFn<Qs8IgemmUkernel> qs8_igemm_ukernel_3x16__avx2;
UkernelFn<Qs8IgemmF32Ukernel> qs8_igemm_f32_ukernel_3x16__avx2;
UkernelFn<Qs8DwconvUkernel> qs8_dwconv_ukernel__avx2;
UkernelFn<Qs8QuantizeUkernel> qs8_quantize_ukernel__avx2;
UkernelFn<Qs8BinaryUkernel> qs8_binary_ukernel__avx2;
UkernelFn<F32MinMaxUkernel> f32_minmax_ukernel__avx2;
UkernelFn<Qs8PoolUkernel> qs8_pool_ukernel__avx2;

UkernelFn<Qs8IgemmUkernel> qs8_igemm_ukernel_6x16__avx512vnni, qs8_igemm_ukernel_6x32__avx512vnni,
    qs8_igemm_ukernel_6x48__avx512vnni, qs8_igemm_ukernel_6x64__avx512vnni;
UkernelFn<Qs8IgemmF32Ukernel> qs8_igemm_f32_ukernel_6x16__avx512vnni, qs8_igemm_f32_ukernel_6x32__avx512vnni,
    qs8_igemm_f32_ukernel_6x48__avx512vnni, qs8_igemm_f32_ukernel_6x64__avx512vnni;
UkernelFn<Qs8DwconvUkernel> qs8_dwconv_ukernel__avx512vnni;
UkernelFn<Qs8QuantizeUkernel> qs8_quantize_ukernel__avx512vnni;
UkernelFn<Qs8BinaryUkernel> qs8_binary_ukernel__avx512vnni;
UkernelFn<F32MinMaxUkernel> f32_minmax_ukernel__avx512vnni;

UkernelFn<Qs8IgemmUkernel> qs8_igemm_ukernel_16x16__amx, qs8_igemm_ukernel_16x32__amx, qs8_igemm_ukernel_16x48__amx,
    qs8_igemm_ukernel_16x64__amx;
UkernelFn<Qs8IgemmF32Ukernel> qs8_igemm_f32_ukernel_16x16__amx, qs8_igemm_f32_ukernel_16x32__amx,
    qs8_igemm_f32_ukernel_16x48__amx, qs8_igemm_f32_ukernel_16x64__amx;
UkernelFn<Qs8BeginUkernel> qs8_igemm_begin__amx;
UkernelFn<Qs8EndUkernel> qs8_igemm_end__amx;

UkernelFn<Qs8IgemmUkernel> qs8_igemm_ukernel_4x16__neondot;
UkernelFn<Qs8IgemmF32Ukernel> qs8_igemm_f32_ukernel_4x16__neondot;
UkernelFn<Qs8DwconvUkernel> qs8_dwconv_ukernel__neondot;
UkernelFn<Qs8QuantizeUkernel> qs8_quantize_ukernel__neondot;
UkernelFn<Qs8BinaryUkernel> qs8_binary_ukernel__neondot;
UkernelFn<F32MinMaxUkernel> f32_minmax_ukernel__neondot;
UkernelFn<Qs8PoolUkernel> qs8_pool_ukernel__neondot;

// The kernel sets this build has and this CPU runs, best first (scalar last,
// when max allows: out holds kMaxKernelSets, isa.h, for all of them).
int supported_qs8_kernels(const Qs8Kernels** out, int max);
// TERN_CPU_ISA's choice (avx512 -> avx512vnni, or avx2 on CPUs without
// VNNI; amx -> amx; neon -> neondot when the CPU has the dot product, else
// scalar), else the best supported; nullptr, logging why, when the forced
// one cannot run: choose_kernels().qs8 (isa.h).
const Qs8Kernels* select_qs8_kernels();

}  // namespace cpu
}  // namespace tern
