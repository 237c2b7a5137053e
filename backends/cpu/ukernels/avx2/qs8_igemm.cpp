// qs8_igemm_ukernel_3x16__avx2 and qs8_dwconv_ukernel__avx2 (ukernels/qs8.h).
// AVX2 has no byte dot product that cannot saturate (vpmaddubsw does), so
// both operands are widened to int16 and vpmaddwd sums pairs of products
// into int32: per column, one partial sum of inputs (k0, k1) and one of
// (k2, k3), added together at the end.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// Inputs k..k+3 of a row (zeros past kc) as int16, four times over.
inline __m256i load_x4(const int8_t* x, size_t k, size_t kc) {
  return _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(qs8_load4(x, k, kc))));
}

// Inputs p[0..3] as int16, four times over.
inline __m256i bcast_x4(const int8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return _mm256_cvtepi8_epi16(_mm_set1_epi32(v));
}

// 8 int32 accumulators -> requantized, clamped floats converted back to int32.
inline __m256i requant8(__m256i acc, const float* scale, const float* offset, __m256 qmin, __m256 qmax) {
  __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_loadu_ps(scale), _mm256_loadu_ps(offset));
  v = _mm256_min_ps(_mm256_max_ps(v, qmin), qmax);
  return _mm256_cvtps_epi32(v);  // round half to even (the default rounding mode)
}

// Two sets of 8 int32 (within int8's range) -> 16 int8 in order.
inline __m128i pack16(__m256i lo, __m256i hi) {
  const __m256i s16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
  return _mm_packs_epi16(_mm256_castsi256_si128(s16), _mm256_extracti128_si256(s16, 1));
}

inline void store_n(int8_t* dst, __m128i v, size_t n) {
  if (n == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
  } else {
    alignas(16) int8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
    memcpy(dst, tmp, n);
  }
}

inline void store_f32(float* dst, __m256 lo, __m256 hi, size_t n) {
  if (n == 16) {
    _mm256_storeu_ps(dst, lo);
    _mm256_storeu_ps(dst + 8, hi);
  } else {
    alignas(32) float tmp[16];
    _mm256_store_ps(tmp, lo);
    _mm256_store_ps(tmp + 8, hi);
    memcpy(dst, tmp, n * sizeof(float));
  }
}

// int8 output (requantized) or float32 (scaled, biased); kWhole: kc is a
// multiple of 4, so every group of 4 inputs is one broadcast load (else each
// group tests for a last 1 to 3 bytes).
template <typename Out, bool kWhole>
void igemm_3x16(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a, const int8_t* w, Out* c,
                size_t c_stride, const Qs8Requant& rq) {
  constexpr size_t kMr = 3;
  // acc[i][q]: row i, columns 4q..4q+3, two partial sums each
  __m256i acc[kMr][4];
  for (size_t i = 0; i < kMr; ++i) {
    for (int q = 0; q < 4; ++q) acc[i][q] = _mm256_setzero_si256();
  }
  const size_t kc4 = (kc + 3) & ~size_t(3);
  for (size_t t = 0; t < ks; ++t) {
    const int8_t* x0 = a[t * kMr];
    const int8_t* x1 = a[t * kMr + 1];
    const int8_t* x2 = a[t * kMr + 2];
    const int8_t* wt = w + t * kc4 * 16;
    for (size_t k = 0; k < kc; k += 4, wt += 64) {
      __m256i v0, v1, v2;
      if constexpr (kWhole) {
        v0 = bcast_x4(x0 + k), v1 = bcast_x4(x1 + k), v2 = bcast_x4(x2 + k);
      } else {  // zeros past kc
        v0 = load_x4(x0, k, kc), v1 = load_x4(x1, k, kc), v2 = load_x4(x2, k, kc);
      }
      for (int q = 0; q < 4; ++q) {
        const __m256i wq = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wt + 16 * q)));
        acc[0][q] = _mm256_add_epi32(acc[0][q], _mm256_madd_epi16(wq, v0));
        acc[1][q] = _mm256_add_epi32(acc[1][q], _mm256_madd_epi16(wq, v1));
        acc[2][q] = _mm256_add_epi32(acc[2][q], _mm256_madd_epi16(wq, v2));
      }
    }
  }
  const __m256 qmin = _mm256_set1_ps(rq.qmin), qmax = _mm256_set1_ps(rq.qmax);
  const __m256i init_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.init));
  const __m256i init_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.init + 8));
  for (size_t i = 0; i < mr; ++i) {
    // hadd pairs the partial sums: [c0 c1 c4 c5 | c2 c3 c6 c7] -> in order
    __m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][0], acc[i][1]), 0xD8);
    __m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][2], acc[i][3]), 0xD8);
    lo = _mm256_add_epi32(lo, init_lo);
    hi = _mm256_add_epi32(hi, init_hi);
    if constexpr (sizeof(Out) == 1) {
      lo = requant8(lo, rq.scale, rq.offset, qmin, qmax);
      hi = requant8(hi, rq.scale + 8, rq.offset + 8, qmin, qmax);
      store_n(c + i * c_stride, pack16(lo, hi), nc);
    } else {
      store_f32(c + i * c_stride,
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_loadu_ps(rq.scale), _mm256_loadu_ps(rq.offset)),
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_loadu_ps(rq.scale + 8), _mm256_loadu_ps(rq.offset + 8)),
                nc);
    }
  }
}

template <typename Out>
void igemm_3x16_any(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a, const int8_t* w, Out* c,
                    size_t c_stride, const Qs8Requant& rq) {
  (kc % 4 == 0 ? igemm_3x16<Out, true> : igemm_3x16<Out, false>)(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

}  // namespace

void qs8_igemm_ukernel_3x16__avx2(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                  const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm_3x16_any(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_3x16__avx2(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                      const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm_3x16_any(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

namespace {

// Depthwise, two taps at a time: the inputs of taps t and t + 1, widened to
// int16 and interleaved channel by channel (vpunpckl/hwd, within each 128-bit
// lane), meet the weights interleaved the same way, and vpmaddwd adds both
// products into each channel's int32: 8 instructions per 2 taps of 16
// channels instead of 18 a product at a time. The interleaving leaves the
// channels in the order [0-3 8-11] (lo) and [4-7 12-15] (hi); two lane
// permutes restore it before the requantization. A block's weights are
// widened and interleaved once, then the kernel walks the pixels; kernels of
// more than kMaxPairedTaps taps (none in the usual nets) take one tap at a time.
constexpr size_t kMaxPairedTaps = 64;

inline __m256i load_x16(const int8_t* p, size_t cn) {
  if (cn == 16) return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  alignas(16) int8_t tmp[16] = {};
  memcpy(tmp, p, cn);
  return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
}

inline void dw_store(int8_t* dst, __m256i acc_l, __m256i acc_h, __m256i init_a, __m256i init_b, const float* scale,
                     const float* offset, __m256 qmin, __m256 qmax, size_t cn) {
  const __m256i a = _mm256_add_epi32(_mm256_permute2x128_si256(acc_l, acc_h, 0x20), init_a);  // channels 0-7
  const __m256i b = _mm256_add_epi32(_mm256_permute2x128_si256(acc_l, acc_h, 0x31), init_b);  // 8-15
  store_n(dst, pack16(requant8(a, scale, offset, qmin, qmax), requant8(b, scale + 8, offset + 8, qmin, qmax)), cn);
}

void dwconv_paired(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const int8_t* w, int8_t* out,
                   size_t out_stride, const Qs8Requant& rq) {
  const __m256 qmin = _mm256_set1_ps(rq.qmin), qmax = _mm256_set1_ps(rq.qmax);
  const size_t pairs = ks / 2;
  __m256i wp[kMaxPairedTaps / 2][2];  // [pair][lo, hi]
  __m256i w_last[2];                  // an odd last tap, paired with zero weights
  for (size_t c0 = 0; c0 < channels; c0 += 16) {
    const size_t cn = channels - c0 < 16 ? channels - c0 : 16;
    const int8_t* wb = w + (c0 >> 4) * ks * 16;
    for (size_t q = 0; q < pairs; ++q) {
      const __m256i w0 = load_x16(wb + 2 * q * 16, 16), w1 = load_x16(wb + (2 * q + 1) * 16, 16);
      wp[q][0] = _mm256_unpacklo_epi16(w0, w1);
      wp[q][1] = _mm256_unpackhi_epi16(w0, w1);
    }
    if (ks % 2 != 0) {
      const __m256i w0 = load_x16(wb + (ks - 1) * 16, 16), zero = _mm256_setzero_si256();
      w_last[0] = _mm256_unpacklo_epi16(w0, zero);
      w_last[1] = _mm256_unpackhi_epi16(w0, zero);
    }
    const __m256i init_a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.init + c0));
    const __m256i init_b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.init + c0 + 8));
    for (size_t p = 0; p < pixels; ++p) {
      const int8_t* const* taps = in + p * ks;
      __m256i acc_l = _mm256_setzero_si256(), acc_h = _mm256_setzero_si256();
      for (size_t q = 0; q < pairs; ++q) {
        const __m256i xa = load_x16(taps[2 * q] + c0, cn), xb = load_x16(taps[2 * q + 1] + c0, cn);
        acc_l = _mm256_add_epi32(acc_l, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), wp[q][0]));
        acc_h = _mm256_add_epi32(acc_h, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), wp[q][1]));
      }
      if (ks % 2 != 0) {  // the odd tap's partner: its own input again, times zero
        const __m256i xa = load_x16(taps[ks - 1] + c0, cn);
        acc_l = _mm256_add_epi32(acc_l, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xa), w_last[0]));
        acc_h = _mm256_add_epi32(acc_h, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xa), w_last[1]));
      }
      dw_store(out + p * out_stride + c0, acc_l, acc_h, init_a, init_b, rq.scale + c0, rq.offset + c0, qmin, qmax,
               cn);
    }
  }
}

}  // namespace

void qs8_dwconv_ukernel__avx2(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const int8_t* w,
                              int8_t* out, size_t out_stride, const Qs8Requant& rq) {
  if (ks <= kMaxPairedTaps) {
    dwconv_paired(channels, pixels, ks, in, w, out, out_stride, rq);
    return;
  }
  const __m256 qmin = _mm256_set1_ps(rq.qmin), qmax = _mm256_set1_ps(rq.qmax);
  for (size_t p = 0; p < pixels; ++p) {
    const int8_t* const* taps = in + p * ks;
    for (size_t c0 = 0; c0 < channels; c0 += 16) {
      const size_t cn = channels - c0 < 16 ? channels - c0 : 16;
      const int8_t* wb = w + (c0 >> 4) * ks * 16;
      __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.init + c0));
      __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.init + c0 + 8));
      for (size_t t = 0; t < ks; ++t) {
        const __m256i prod = _mm256_mullo_epi16(load_x16(taps[t] + c0, cn), load_x16(wb + t * 16, 16));  // fits int16
        lo = _mm256_add_epi32(lo, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(prod)));
        hi = _mm256_add_epi32(hi, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(prod, 1)));
      }
      lo = requant8(lo, rq.scale + c0, rq.offset + c0, qmin, qmax);
      hi = requant8(hi, rq.scale + c0 + 8, rq.offset + c0 + 8, qmin, qmax);
      store_n(out + p * out_stride + c0, pack16(lo, hi), cn);
    }
  }
}

}  // namespace cpu
}  // namespace tern
