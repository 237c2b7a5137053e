// AVX-512 microkernels (compiled with -mavx512f -mfma; isa.cpp calls them
// only on CPUs that have AVX-512F):
//   f32_igemm_ukernel_8x32__avx512  8 rows x 2 panels, 16 accumulators
//   f32_igemm_ukernel_8x16__avx512  8 rows x 1 panel: the last odd panel
//   f32_dwconv_ukernel__avx512      16 channels per vector, tails masked
// Per k step the 8x32 kernel loads 2 weight vectors and broadcasts 8 A
// values into 16 FMAs: enough independent chains to fill two FMA pipes.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/ukernels.h"

// GCC 12 reports the "undefined" pass-through operand inside the
// _mm512_{min,max}_ps builtins as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMr = 8;

// One k step of one row: c0 (columns 0-15) and, with two panels, c1
// (16-31) += a[k] * w[k].
template <int kPanels>
inline void row_step(const float* ak, __m512 v0, __m512 v1, __m512& c0, __m512& c1) {
  const __m512 ai = _mm512_set1_ps(*ak);
  c0 = _mm512_fmadd_ps(ai, v0, c0);
  if constexpr (kPanels == 2) c1 = _mm512_fmadd_ps(ai, v1, c1);
}

template <int kPanels>
void igemm(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
           size_t panel_floats, float* c, size_t c_stride, const float* res, MinMax mm) {
  // Named accumulators and a k loop of its own, one k a step, not an array
  // and common/f32_igemm.h's unrolled loop: GCC kept that array on the stack
  // around the tap loop and copied registers inside the k loop (the avx2
  // kernel's story: avx2/f32_igemm.cpp). Same operations in the same order:
  // the same bits.
  const __m512 b0 = _mm512_loadu_ps(w), b1 = kPanels == 2 ? _mm512_loadu_ps(w + panel_floats) : b0;
  __m512 c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1;
  __m512 c40 = b0, c41 = b1, c50 = b0, c51 = b1, c60 = b0, c61 = b1, c70 = b0, c71 = b1;
  const float* wk = w + kPanel;
  for (size_t t = 0; t < ks; ++t, a += kMr) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
    for (size_t k = 0; k < kc; ++k, wk += kPanel) {
      const __m512 v0 = _mm512_loadu_ps(wk), v1 = kPanels == 2 ? _mm512_loadu_ps(wk + panel_floats) : v0;
      row_step<kPanels>(a0 + k, v0, v1, c00, c01);
      row_step<kPanels>(a1 + k, v0, v1, c10, c11);
      row_step<kPanels>(a2 + k, v0, v1, c20, c21);
      row_step<kPanels>(a3 + k, v0, v1, c30, c31);
      row_step<kPanels>(a4 + k, v0, v1, c40, c41);
      row_step<kPanels>(a5 + k, v0, v1, c50, c51);
      row_step<kPanels>(a6 + k, v0, v1, c60, c61);
      row_step<kPanels>(a7 + k, v0, v1, c70, c71);
    }
  }
  __m512 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                        {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  const __mmask16 m0 = tail_mask(nc);
  const __mmask16 m1 = nc > 16 ? tail_mask(nc - 16) : __mmask16(0);
  // Rows i < kMr with a test, not i < mr: acc is then indexed by constants
  // only and stays in registers (a run-time index spills it to the stack).
#pragma GCC unroll 8
  for (size_t i = 0; i < kMr; ++i) {
    if (i >= mr) break;
    if (res != nullptr) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, res + i * c_stride));
      if constexpr (kPanels == 2) acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, res + i * c_stride + 16));
    }
    _mm512_mask_storeu_ps(c + i * c_stride, m0, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][0])));
    if constexpr (kPanels == 2) {
      _mm512_mask_storeu_ps(c + i * c_stride + 16, m1, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][1])));
    }
  }
}

}  // namespace

void f32_igemm_ukernel_8x32__avx512(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a,
                                    const float* w, size_t panel_floats, float* c, size_t c_stride,
                                    const float* res, MinMax clamp) {
  igemm<2>(mr, nc, kc, ks, a, w, panel_floats, c, c_stride, res, clamp);
}

void f32_igemm_ukernel_8x16__avx512(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a,
                                    const float* w, size_t panel_floats, float* c, size_t c_stride,
                                    const float* res, MinMax clamp) {
  igemm<1>(mr, nc, kc, ks, a, w, panel_floats, c, c_stride, res, clamp);
}

namespace {

// One block of 16 channels over all pixels, kKs taps (0: ks at run time).
// With kKs known, the block's weights stay in registers across pixels and
// two pixels go at once (independent FMA chains).
template <size_t kKs>
void dwconv_block(size_t c0, __mmask16 m, size_t pixels, size_t ks, const float* const* in, const float* w,
                  float* out, size_t out_stride, __m512 lo, __m512 hi) {
  constexpr size_t kMaxKs = kKs ? kKs : 1;
  __m512 wr[kMaxKs];
  if constexpr (kKs > 0) {
    for (size_t t = 0; t < kKs; ++t) wr[t] = _mm512_loadu_ps(w + kPanel * (1 + t));
    ks = kKs;
  }
  const __m512 bias = _mm512_loadu_ps(w);
  size_t p = 0;
  for (; kKs > 0 && p + 2 <= pixels; p += 2) {
    __m512 a0 = bias, a1 = bias;
    const float* const* t0 = in + p * ks;
    const float* const* t1 = t0 + ks;
    for (size_t t = 0; t < kMaxKs; ++t) {
      a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, t0[t] + c0), wr[t], a0);
      a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, t1[t] + c0), wr[t], a1);
    }
    _mm512_mask_storeu_ps(out + p * out_stride + c0, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a0)));
    _mm512_mask_storeu_ps(out + (p + 1) * out_stride + c0, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a1)));
  }
  for (; p < pixels; ++p) {
    __m512 acc = bias;
    const float* const* taps = in + p * ks;
    for (size_t t = 0; t < ks; ++t) {
      const __m512 wt = kKs > 0 ? wr[t < kMaxKs ? t : 0] : _mm512_loadu_ps(w + kPanel * (1 + t));
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, taps[t] + c0), wt, acc);
    }
    _mm512_mask_storeu_ps(out + p * out_stride + c0, m, _mm512_min_ps(hi, _mm512_max_ps(lo, acc)));
  }
}

}  // namespace

void f32_dwconv_ukernel__avx512(size_t channels, size_t pixels, size_t ks, const float* const* in,
                                const float* w, float* out, size_t out_stride, MinMax mm) {
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  for (size_t c0 = 0; c0 < channels; c0 += kPanel) {
    const __mmask16 m = tail_mask(channels - c0);
    switch (ks) {
      case 9: dwconv_block<9>(c0, m, pixels, ks, in, w, out, out_stride, lo, hi); break;
      case 25: dwconv_block<25>(c0, m, pixels, ks, in, w, out, out_stride, lo, hi); break;
      default: dwconv_block<0>(c0, m, pixels, ks, in, w, out, out_stride, lo, hi); break;
    }
    w += kPanel * (1 + ks);
  }
}

}  // namespace cpu
}  // namespace tern
