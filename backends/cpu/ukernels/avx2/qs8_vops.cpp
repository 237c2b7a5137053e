// qs8_quantize_ukernel__avx2 and qs8_binary_ukernel__avx2 (ukernels/qs8.h):
// 8 elements a step, the tail through the scalar kernels.
#include <immintrin.h>

#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// 8 floats -> clamp(round(v) + zero) as 8 int8 in the low 8 bytes. max/min
// return their second operand for a NaN: NaN -> lo, as the scalar kernel.
inline __m128i to_int8x8(__m256 v, __m256 lo, __m256 hi, __m256i zero) {
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  const __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(v), zero);  // round half to even
  const __m128i s16 = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
  return _mm_packs_epi16(s16, s16);
}

inline __m256 load8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

}  // namespace

void f32_minmax_ukernel__avx2(size_t n, const float* x, float* lo, float* hi) {
  // min(v, acc) returns acc where v is NaN: NaNs are skipped, as in the scalar kernel
  __m256 l = _mm256_set1_ps(x[0]), h = l;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    l = _mm256_min_ps(v, l);
    h = _mm256_max_ps(v, h);
  }
  alignas(32) float ls[8], hs[8];
  _mm256_store_ps(ls, l);
  _mm256_store_ps(hs, h);
  float a = ls[0], b = hs[0];
  for (int j = 1; j < 8; ++j) a = ls[j] < a ? ls[j] : a, b = hs[j] > b ? hs[j] : b;
  for (; i < n; ++i) a = x[i] < a ? x[i] : a, b = x[i] > b ? x[i] : b;
  *lo = a, *hi = b;
}

void qs8_quantize_ukernel__avx2(size_t n, const float* x, int8_t* y, const Qs8QuantizeParams& p) {
  const __m256 s = _mm256_set1_ps(p.inv_scale);
  const __m256 lo = _mm256_set1_ps(p.qmin - p.zero_point), hi = _mm256_set1_ps(p.qmax - p.zero_point);
  const __m256i zero = _mm256_set1_epi32(static_cast<int32_t>(p.zero_point));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), to_int8x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), lo, hi, zero));
  }
  qs8_quantize_ukernel__scalar(n - i, x + i, y + i, p);
}

void qs8_binary_ukernel__avx2(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p) {
  const __m256 as = _mm256_set1_ps(p.a_scale), az = _mm256_set1_ps(p.a_zero);
  const __m256 bs = _mm256_set1_ps(p.b_scale), bz = _mm256_set1_ps(p.b_zero);
  const __m256 ys = _mm256_set1_ps(p.y_inv_scale);
  const __m256 lo = _mm256_set1_ps(p.qmin - p.y_zero), hi = _mm256_set1_ps(p.qmax - p.y_zero);
  const __m256i zero = _mm256_set1_epi32(static_cast<int32_t>(p.y_zero));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 fa = _mm256_mul_ps(_mm256_sub_ps(load8(a + i), az), as);
    const __m256 fb = _mm256_mul_ps(_mm256_sub_ps(load8(b + i), bz), bs);
    const __m256 v = _mm256_mul_ps(p.mul ? _mm256_mul_ps(fa, fb) : _mm256_add_ps(fa, fb), ys);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), to_int8x8(v, lo, hi, zero));
  }
  qs8_binary_ukernel__scalar(n - i, a + i, b + i, y + i, p);
}

}  // namespace cpu
}  // namespace tern
