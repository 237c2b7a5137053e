// The cpu backend's microkernels: the innermost loops, one family per
// operation, one file per ISA (backends/cpu/ukernels/<isa>/), named
// <dtype>_<op>_ukernel[_<tile>]__<isa>, the ISA being the folder's (e.g.
// f32_igemm_ukernel_8x32__avx512 in avx512/; tests/python/test_cpu_ukernel_names.py
// checks it). The tile is there where callers depend on it: a GEMM's rows x
// columns per call, a Winograd transform's patch; the depthwise, pooling and
// elementwise kernels take any size.
// A scalar version of each family is always built and tested; isa.cpp picks
// the set the running CPU supports (or TERN_CPU_ISA forces one).
//
// Weights are packed once, at export, in one layout for every ISA: panels of
// kPanel = 16 output channels. A file packed on a laptop runs in place on an
// AVX2, AVX-512, NEON or scalar machine.
//
//   packed GEMM / convolution weights, N outputs, ks taps of kc inputs:
//     ceil(N / 16) panels; panel p = [16 bias][ks][kc][16 weights]
//     (columns past N are zero; a panel is 16 * (1 + ks * kc) floats)
//   packed depthwise weights, C channels, ks taps:
//     ceil(C / 16) blocks; block b = [16 bias][ks][16 weights]
//
// Activations are NHWC inside the backend: a pixel's channels are contiguous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tern {
namespace cpu {

constexpr int kPanel = 16;

// Outputs are clamped to [min, max]: relu is [0, +inf), relu6 [0, 6],
// none (-inf, +inf).
struct MinMax {
  float min;
  float max;
};

// Indirect GEMM (a GEMM whose A rows come through pointers, which makes a
// convolution a GEMM without an im2col copy):
//
//   C[i][j] = clamp(bias[j] + sum_{t < ks} sum_{c < kc} A[t][i][c] * W[t][c][j])
//
//   i < mr <= MR rows (output pixels), j < nc <= NR columns (output channels)
//   a: ks * MR row pointers, a[t * MR + i] -> kc floats; rows mr..MR-1 must
//      point somewhere readable too (callers repeat the last row), and a
//      padded tap points at zeros
//   w: the first panel of packed weights; kernels wider than one panel
//      read panel p at w + p * panel_floats
//   c: row i at c + i * c_stride (floats)
//   res: nullptr, or a residual laid out as c (row i at res + i * c_stride),
//        added before the clamp: C = clamp(bias + A W + res)
using IgemmUkernel = void (*)(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a,
                              const float* w, size_t panel_floats, float* c, size_t c_stride,
                              const float* res, MinMax clamp);

struct IgemmConfig {
  IgemmUkernel ukernel;
  int mr;  // rows per call
  int nr;  // columns per call: a multiple of kPanel
};

// Depthwise convolution of `pixels` output pixels, all C channels:
//
//   out[p][c] = clamp(bias[c] + sum_{t < ks} in[p][t][c] * w[t][c])
//
//   in: pixels * ks pointers, in[p * ks + t] -> the C channels of the input
//       pixel tap t of output pixel p reads (zeros for padding)
//   w: packed depthwise weights (above); out: pixel p at out + p * out_stride
using DwconvUkernel = void (*)(size_t channels, size_t pixels, size_t ks, const float* const* in,
                               const float* w, float* out, size_t out_stride, MinMax clamp);

// Depthwise convolution of one output row's interior pixels, without
// per-pixel pointers (ukernels/common/f32_dwconv_rows.h): tap (ki, kj) of
// pixel p reads rows[ki] + p * step + kj * dil, for ki in [ki0, ki1).
using DwconvRowsUkernel = void (*)(size_t channels, size_t pixels, size_t kh, size_t kw, size_t ki0, size_t ki1,
                                   const float* const* rows, size_t step, size_t dil, const float* w, float* out,
                                   size_t out_stride, MinMax clamp);

// Activations in place: kind 0 sigmoid, 1 tanh, 2 gelu (erf form), 3 silu, 4 exp,
// 5 hardswish;
// v[i] = f(v[i]) for i < n. Accurate to about 2e-7 (ukernels/common/f32_vact.h).
using VactUkernel = void (*)(int kind, float* v, size_t n);

// Max or average pooling of `pixels` output pixels (ukernels/common/f32_pool.h):
// in[p * taps + t] -> the c channels of tap t of output pixel p; scale:
// nullptr for the max, else each pixel's 1 / count for the average.
using PoolUkernel = void (*)(size_t c, size_t pixels, size_t taps, const float* const* in, const float* scale,
                             float* out, size_t out_stride);

// Winograd F(2x2, 3x3) transforms of one tile (ukernels/common/f32_winograd.h):
// in: 16 pointers to the patch's pixels (c floats each); v: 16 rows, stride apart.
// out: m's 16 rows, stride apart -> 4 output pixels (oc floats each; every
// pointer writable, res readable: callers point the ones outside y at scratch).
using WinogradInUkernel = void (*)(const float* const* in, size_t c, float* v, size_t stride);
using WinogradOutUkernel = void (*)(const float* m, size_t stride, size_t oc, const float* bias, float* const* out,
                                    const float* const* res, MinMax clamp);

// Attention of g <= 8 query rows over n keys read where they lie, rows of
// k and v `stride` floats apart (a KV cache's layout; ukernels/common/f32_attn_rows.h):
//   dots: s[r * s_stride + j] = scale * q_r . k_j   (e floats each)
//   wsum: y[r * y_stride + c] = sum_j p[r * p_stride + j] * v_j[c]   (c < ev)
using AttnDotsUkernel = void (*)(size_t g, size_t n, size_t e, const float* q, size_t q_stride, const float* k,
                                 size_t k_stride, float scale, float* s, size_t s_stride);
using AttnWsumUkernel = void (*)(size_t g, size_t n, size_t ev, const float* p, size_t p_stride, const float* v,
                                 size_t v_stride, float* y, size_t y_stride);

// The kernels, declared through the types above (UkernelFn<IgemmUkernel> is
// IgemmUkernel's function type) and defined in ukernels/<isa>/. Tiles:
// igemm scalar 4x16, avx2 and neon 6x16, avx512 8x32 and 8x16 (its one-panel
// tail), every ISA 1x64 for one output row (a GEMV: a linear layer over a
// single row); Winograd 4x4 input patches, 2x2 output pixels.
template <typename Ptr>
using UkernelFn = std::remove_pointer_t<Ptr>;

UkernelFn<IgemmUkernel> f32_igemm_ukernel_4x16__scalar, f32_igemm_ukernel_1x64__scalar;
UkernelFn<DwconvUkernel> f32_dwconv_ukernel__scalar;
UkernelFn<DwconvRowsUkernel> f32_dwconv_rows_ukernel__scalar;
UkernelFn<VactUkernel> f32_vact_ukernel__scalar;
UkernelFn<PoolUkernel> f32_pool_ukernel__scalar;
UkernelFn<WinogradInUkernel> f32_winograd_in_ukernel_4x4__scalar;
UkernelFn<WinogradOutUkernel> f32_winograd_out_ukernel_2x2__scalar;
UkernelFn<AttnDotsUkernel> f32_attn_dots_ukernel__scalar;
UkernelFn<AttnWsumUkernel> f32_attn_wsum_ukernel__scalar;

UkernelFn<IgemmUkernel> f32_igemm_ukernel_6x16__avx2, f32_igemm_ukernel_1x64__avx2;
UkernelFn<DwconvUkernel> f32_dwconv_ukernel__avx2;
UkernelFn<DwconvRowsUkernel> f32_dwconv_rows_ukernel__avx2;
UkernelFn<VactUkernel> f32_vact_ukernel__avx2;
UkernelFn<PoolUkernel> f32_pool_ukernel__avx2;
UkernelFn<WinogradInUkernel> f32_winograd_in_ukernel_4x4__avx2;
UkernelFn<WinogradOutUkernel> f32_winograd_out_ukernel_2x2__avx2;
UkernelFn<AttnDotsUkernel> f32_attn_dots_ukernel__avx2;
UkernelFn<AttnWsumUkernel> f32_attn_wsum_ukernel__avx2;

UkernelFn<IgemmUkernel> f32_igemm_ukernel_8x32__avx512, f32_igemm_ukernel_8x16__avx512, f32_igemm_ukernel_1x64__avx512;
UkernelFn<DwconvUkernel> f32_dwconv_ukernel__avx512;
UkernelFn<DwconvRowsUkernel> f32_dwconv_rows_ukernel__avx512;
UkernelFn<VactUkernel> f32_vact_ukernel__avx512;
UkernelFn<PoolUkernel> f32_pool_ukernel__avx512;
UkernelFn<WinogradInUkernel> f32_winograd_in_ukernel_4x4__avx512;
UkernelFn<WinogradOutUkernel> f32_winograd_out_ukernel_2x2__avx512;
UkernelFn<AttnDotsUkernel> f32_attn_dots_ukernel__avx512;
UkernelFn<AttnWsumUkernel> f32_attn_wsum_ukernel__avx512;

UkernelFn<IgemmUkernel> f32_igemm_ukernel_6x16__neon, f32_igemm_ukernel_1x64__neon;
UkernelFn<DwconvUkernel> f32_dwconv_ukernel__neon;
UkernelFn<DwconvRowsUkernel> f32_dwconv_rows_ukernel__neon;
UkernelFn<VactUkernel> f32_vact_ukernel__neon;
UkernelFn<PoolUkernel> f32_pool_ukernel__neon;
UkernelFn<WinogradInUkernel> f32_winograd_in_ukernel_4x4__neon;
UkernelFn<WinogradOutUkernel> f32_winograd_out_ukernel_2x2__neon;
UkernelFn<AttnDotsUkernel> f32_attn_dots_ukernel__neon;
UkernelFn<AttnWsumUkernel> f32_attn_wsum_ukernel__neon;

}  // namespace cpu
}  // namespace tern
