// AVX-512 microkernels (compiled with -mavx512f -mfma; isa.cpp calls them
// only on CPUs that have AVX-512F):
//   f32_igemm_ukernel_8x32__avx512  8 rows x 2 panels, 16 accumulators
//   f32_igemm_ukernel_8x16__avx512  8 rows x 1 panel: the last odd panel
//   f32_dwconv_ukernel__avx512      16 channels per vector, tails masked
// Per k step the 8x32 kernel loads 2 weight vectors and broadcasts 8 A
// values into 16 FMAs: enough independent chains to fill two FMA pipes.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/common/f32_igemm.h"
#include "backends/cpu/ukernels/ukernels.h"

// GCC 12 reports the "undefined" pass-through operand inside the
// _mm512_{min,max}_ps builtins as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMr = 8;

template <int kPanels>
void igemm(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
           size_t panel_floats, float* c, size_t c_stride, const float* res, MinMax mm) {
  __m512 acc[kMr][kPanels];
  for (int j = 0; j < kPanels; ++j) {
    const __m512 bias = _mm512_loadu_ps(w + j * panel_floats);
    for (size_t i = 0; i < kMr; ++i) acc[i][j] = bias;
  }
  // one k step: kPanels weight vectors (the second panel_floats after the
  // first), kMr broadcasts, kMr * kPanels FMAs
  igemm_k_loop<kMr>(kc, ks, a, w + kPanel, [&](const float* const* ap, size_t k, const float* wk) {
    const __m512 v0 = _mm512_loadu_ps(wk);
    if constexpr (kPanels == 2) {
      const __m512 v1 = _mm512_loadu_ps(wk + panel_floats);
      for (size_t i = 0; i < kMr; ++i) {
        const __m512 ai = _mm512_set1_ps(ap[i][k]);
        acc[i][0] = _mm512_fmadd_ps(ai, v0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(ai, v1, acc[i][1]);
      }
    } else {
      for (size_t i = 0; i < kMr; ++i) acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(ap[i][k]), v0, acc[i][0]);
    }
  });
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
