// f32_dwconv_rows_ukernel__avx512: depthwise convolution of a row's interior
// pixels (see ukernels.h), 16 channels per vector, 8 pixels at once (then 4,
// then 1): 8 independent FMA chains, one weight load per tap for all 8.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/ukernels.h"

// GCC 12 reports the "undefined" pass-through operand inside the
// _mm512_{min,max}_ps builtins as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tern {
namespace cpu {
namespace {

// kP pixels from p on, one 16-channel block: kP independent accumulator
// chains (a tap's FMAs for kP pixels share one weight load), so the FMA
// latency is covered from kP = 8 on.
template <size_t kP, size_t kKw>
inline void pixels(size_t p, size_t kw_rt, size_t ki0, size_t ki1, const float* const* rows, size_t c0, size_t step,
                   size_t dil, __mmask16 m, const float* w, float* out, size_t out_stride, __m512 lo, __m512 hi) {
  const size_t kw = kKw ? kKw : kw_rt;
  __m512 acc[kP];
  const __m512 bias = _mm512_loadu_ps(w);
#pragma GCC unroll 8
  for (size_t i = 0; i < kP; ++i) acc[i] = bias;
  for (size_t ki = ki0; ki < ki1; ++ki) {
    const float* x = rows[ki] + p * step + c0;
    const float* wt = w + kPanel * (1 + ki * kw);
    for (size_t kj = 0; kj < kw; ++kj, x += dil, wt += kPanel) {
      const __m512 wv = _mm512_loadu_ps(wt);
#pragma GCC unroll 8
      for (size_t i = 0; i < kP; ++i) acc[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i * step), wv, acc[i]);
    }
  }
#pragma GCC unroll 8
  for (size_t i = 0; i < kP; ++i) {
    _mm512_mask_storeu_ps(out + (p + i) * out_stride + c0, m, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i])));
  }
}

template <size_t kKw>
void rows_k(size_t channels, size_t pixels_n, size_t kh, size_t kw, size_t ki0, size_t ki1, const float* const* rows,
            size_t step, size_t dil, const float* w, float* out, size_t out_stride, MinMax mm) {
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  for (size_t c0 = 0; c0 < channels; c0 += kPanel, w += kPanel * (1 + kh * kw)) {
    const __mmask16 m = tail_mask(channels - c0);
    size_t p = 0;
    for (; p + 8 <= pixels_n; p += 8) pixels<8, kKw>(p, kw, ki0, ki1, rows, c0, step, dil, m, w, out, out_stride, lo, hi);
    if (p + 4 <= pixels_n) {
      pixels<4, kKw>(p, kw, ki0, ki1, rows, c0, step, dil, m, w, out, out_stride, lo, hi);
      p += 4;
    }
    for (; p < pixels_n; ++p) pixels<1, kKw>(p, kw, ki0, ki1, rows, c0, step, dil, m, w, out, out_stride, lo, hi);
  }
}

}  // namespace

void f32_dwconv_rows_ukernel__avx512(size_t channels, size_t pixels, size_t kh, size_t kw, size_t ki0, size_t ki1,
                                     const float* const* rows, size_t step, size_t dil, const float* w, float* out,
                                     size_t out_stride, MinMax clamp) {
  switch (kw) {
    case 3: rows_k<3>(channels, pixels, kh, kw, ki0, ki1, rows, step, dil, w, out, out_stride, clamp); break;
    case 5: rows_k<5>(channels, pixels, kh, kw, ki0, ki1, rows, step, dil, w, out, out_stride, clamp); break;
    default: rows_k<0>(channels, pixels, kh, kw, ki0, ki1, rows, step, dil, w, out, out_stride, clamp); break;
  }
}

}  // namespace cpu
}  // namespace tern
