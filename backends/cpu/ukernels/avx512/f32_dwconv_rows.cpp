// f32_dwconv_rows_ukernel__avx512: depthwise convolution of a row's interior
// pixels (see ukernels.h), 16 channels per vector. 3x3 kernels keep their 9
// weight vectors in registers; every size runs two pixels at once.
#include <immintrin.h>

#include "backends/cpu/ukernels/ukernels.h"

// GCC 12 reports the "undefined" pass-through operand inside the
// _mm512_{min,max}_ps builtins as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

inline __mmask16 tail_mask(size_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

void rows_3x3(size_t channels, size_t pixels, size_t ki0, size_t ki1, const float* const* rows, size_t step,
              size_t dil, const float* w, float* out, size_t out_stride, MinMax mm) {
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  for (size_t c0 = 0; c0 < channels; c0 += kPanel, w += kPanel * 10) {
    const __mmask16 m = tail_mask(channels - c0);
    __m512 wr[9];
    for (int t = 0; t < 9; ++t) wr[t] = _mm512_loadu_ps(w + kPanel * (1 + t));
    const __m512 bias = _mm512_loadu_ps(w);
    size_t p = 0;
    for (; p + 2 <= pixels; p += 2) {
      __m512 a0 = bias, a1 = bias;
      for (size_t ki = ki0; ki < ki1; ++ki) {
        const float* x = rows[ki] + p * step + c0;
        for (size_t kj = 0; kj < 3; ++kj) {
          a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + kj * dil), wr[ki * 3 + kj], a0);
          a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + step + kj * dil), wr[ki * 3 + kj], a1);
        }
      }
      _mm512_mask_storeu_ps(out + p * out_stride + c0, m, _mm512_min_ps(_mm512_max_ps(a0, lo), hi));
      _mm512_mask_storeu_ps(out + (p + 1) * out_stride + c0, m, _mm512_min_ps(_mm512_max_ps(a1, lo), hi));
    }
    for (; p < pixels; ++p) {
      __m512 a0 = bias;
      for (size_t ki = ki0; ki < ki1; ++ki) {
        const float* x = rows[ki] + p * step + c0;
        for (size_t kj = 0; kj < 3; ++kj) a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + kj * dil), wr[ki * 3 + kj], a0);
      }
      _mm512_mask_storeu_ps(out + p * out_stride + c0, m, _mm512_min_ps(_mm512_max_ps(a0, lo), hi));
    }
  }
}

// Any kernel size: weights from L1 each tap, two pixels at once.
void rows_any(size_t channels, size_t pixels, size_t kh, size_t kw, size_t ki0, size_t ki1, const float* const* rows,
              size_t step, size_t dil, const float* w, float* out, size_t out_stride, MinMax mm) {
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  for (size_t c0 = 0; c0 < channels; c0 += kPanel, w += kPanel * (1 + kh * kw)) {
    const __mmask16 m = tail_mask(channels - c0);
    const __m512 bias = _mm512_loadu_ps(w);
    size_t p = 0;
    for (; p + 2 <= pixels; p += 2) {
      __m512 a0 = bias, a1 = bias;
      for (size_t ki = ki0; ki < ki1; ++ki) {
        const float* x = rows[ki] + p * step + c0;
        const float* wt = w + kPanel * (1 + ki * kw);
        for (size_t kj = 0; kj < kw; ++kj, x += dil, wt += kPanel) {
          const __m512 wv = _mm512_loadu_ps(wt);
          a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x), wv, a0);
          a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + step), wv, a1);
        }
      }
      _mm512_mask_storeu_ps(out + p * out_stride + c0, m, _mm512_min_ps(_mm512_max_ps(a0, lo), hi));
      _mm512_mask_storeu_ps(out + (p + 1) * out_stride + c0, m, _mm512_min_ps(_mm512_max_ps(a1, lo), hi));
    }
    for (; p < pixels; ++p) {
      __m512 a0 = bias;
      for (size_t ki = ki0; ki < ki1; ++ki) {
        const float* x = rows[ki] + p * step + c0;
        const float* wt = w + kPanel * (1 + ki * kw);
        for (size_t kj = 0; kj < kw; ++kj, x += dil, wt += kPanel) {
          a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x), _mm512_loadu_ps(wt), a0);
        }
      }
      _mm512_mask_storeu_ps(out + p * out_stride + c0, m, _mm512_min_ps(_mm512_max_ps(a0, lo), hi));
    }
  }
}

}  // namespace

void f32_dwconv_rows_ukernel__avx512(size_t channels, size_t pixels, size_t kh, size_t kw, size_t ki0, size_t ki1,
                                     const float* const* rows, size_t step, size_t dil, const float* w, float* out,
                                     size_t out_stride, MinMax clamp) {
  if (kh == 3 && kw == 3) {
    rows_3x3(channels, pixels, ki0, ki1, rows, step, dil, w, out, out_stride, clamp);
  } else {
    rows_any(channels, pixels, kh, kw, ki0, ki1, rows, step, dil, w, out, out_stride, clamp);
  }
}

}  // namespace cpu
}  // namespace tern
