// What the x86 block-quantized kernels share (ukernels/qb.h): the halves of
// 8 blocks as floats, the 8 lanes' last step, the block sums of 8 blocks,
// and the activation quantization, all on 256-bit vectors (AVX2; the
// avx512vnni file includes it too). In an unnamed namespace, as every
// header of ukernels/common/ (avx512.h says why).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/ukernels/qb.h"

namespace tern {
namespace cpu {
namespace {

// 8 halves (the low 16 bits of each 32-bit lane) as 8 floats, exactly as
// qb_half converts them, by integer moves (AVX2 has no half conversion
// without F16C, which the avx2 set does not require).
inline __m256 qb_half8(__m256i h) {
  const __m256i em = _mm256_and_si256(h, _mm256_set1_epi32(0x7FFF));
  const __m256i e = _mm256_srli_epi32(em, 10);
  const __m256i rebias = _mm256_set1_epi32(112 << 23);
  __m256i norm = _mm256_add_epi32(_mm256_slli_epi32(em, 13), rebias);
  norm = _mm256_add_epi32(norm, _mm256_and_si256(_mm256_cmpeq_epi32(e, _mm256_set1_epi32(31)), rebias));
  const __m256i sub = _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(em), _mm256_set1_ps(0x1p-24f)));
  __m256i r = _mm256_blendv_epi8(norm, sub, _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
  r = _mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16));
  return _mm256_castsi256_ps(r);
}

// Lanes below n of 8, as a maskload / gather mask.
inline __m256i qb_lanes(size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The first 4 bytes of blocks t < n (p + t * stride), zeros after: the d
// halves (low 16 bits) and, in Q4_1, the m halves (high 16 bits). Each read
// stays inside its block. Scalar loads into a vector, not vpgatherdd: on
// Zen 4 the gather of blocks not yet in cache made a Q8_0 GEMV streaming
// from memory 2.5x slower (bench/blocklinear.py's 49152 x 576).
inline __m256i qb_gather_heads(const uint8_t* p, size_t stride, size_t n) {
  int32_t h[8];
  for (size_t t = 0; t < 8; ++t) {
    h[t] = 0;
    if (t < n) memcpy(&h[t], p + t * stride, 4);
  }
  return _mm256_setr_epi32(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]);
}

// The spec's tree over the 8 lanes: ((0+4)+(2+6))+((1+5)+(3+7)).
inline float qb_combine8(__m256 acc) {
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));  // 0+4, 1+5, 2+6, 3+7
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));                                      // (0+4)+(2+6), (1+5)+(3+7)
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

// The float step of 8 blocks (b0 .. b0 + n) of one activation row: isum the
// blocks' exact sums (Q4_0: of the nibbles, corrected here by -8 * s),
// dw and mw the weights' halves (zeros past n).
template <int F>
inline __m256 qb_terms8(__m256i isum, __m256 dw, __m256 mw, const uint8_t* a, size_t k, size_t b0, size_t n) {
  const size_t nb = k / kQbBlock;
  const float* d = reinterpret_cast<const float*>(a + k) + b0;
  const int32_t* s = reinterpret_cast<const int32_t*>(a + k + 4 * nb) + b0;
  __m256 da;
  __m256i sa;
  if (n == 8) {
    da = _mm256_loadu_ps(d);
    sa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  } else {
    const __m256i lanes = qb_lanes(n);
    da = _mm256_maskload_ps(d, lanes);
    sa = _mm256_maskload_epi32(reinterpret_cast<const int*>(s), lanes);
  }
  if (F == kQbQ4_0) isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(sa, 3));
  __m256 t = _mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum));
  if (F == kQbQ4_1) t = _mm256_add_ps(t, _mm256_mul_ps(mw, _mm256_mul_ps(da, _mm256_cvtepi32_ps(sa))));
  return t;
}

// One row of k floats into its quantized row (qb.h), 8 floats a vector.
inline void qb_quantize_avx2(size_t k, const float* x, uint8_t* row) {
  const size_t nb = k / kQbBlock;
  int8_t* q = reinterpret_cast<int8_t*>(row);
  float* d = reinterpret_cast<float*>(row + k);
  int32_t* s = reinterpret_cast<int32_t*>(row + k + 4 * nb);
  const __m256 sign = _mm256_set1_ps(-0.0f), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  for (size_t b = 0; b < nb; ++b, x += kQbBlock) {
    __m256 v[4], m = _mm256_setzero_ps();
    for (int t = 0; t < 4; ++t) {
      v[t] = _mm256_loadu_ps(x + 8 * t);
      m = _mm256_max_ps(_mm256_andnot_ps(sign, v[t]), m);  // a NaN |x| yields m: skipped
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float db = _mm_cvtss_f32(m4) / 127.0f;
    const __m256 id = _mm256_set1_ps(db != 0.0f ? 1.0f / db : 0.0f);
    __m256i qi[4];
    for (int t = 0; t < 4; ++t) {
      __m256 y = _mm256_max_ps(_mm256_mul_ps(v[t], id), lo);  // a NaN yields -127
      y = _mm256_min_ps(y, hi);
      qi[t] = _mm256_cvtps_epi32(y);  // round half to even (MXCSR's default)
    }
    const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    // int32 -> int8 in order: packs interleave 128-bit lanes, the permute puts them back
    const __m256i p01 = _mm256_packs_epi32(qi[0], qi[1]), p23 = _mm256_packs_epi32(qi[2], qi[3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23),
                                                      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQbBlock), bytes);
    d[b] = db;
    s[b] = _mm_cvtsi128_si32(s4);
  }
  const size_t used = k + 8 * nb;
  memset(row + used, 0, qb_row_bytes(k) - used);
}

}  // namespace
}  // namespace cpu
}  // namespace tern
