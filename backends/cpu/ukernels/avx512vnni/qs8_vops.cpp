// qs8_quantize_ukernel__avx512vnni and qs8_binary_ukernel__avx512vnni (ukernels/qs8.h):
// 16 elements a step, the tail under a mask. Built with the VNNI kernels'
// flags (AVX-512 F, BW, VL) and run in their set.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/qs8.h"

// GCC 12 warns inside its own AVX-512 headers (the unmasked forms pass an
// undefined source); a false positive, as in ukernels/avx512/f32_igemm.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same, in _mm512_reduce_min_ps

namespace tern {
namespace cpu {
namespace {

// max/min return their second operand for a NaN: NaN -> lo, as the scalar kernel.
inline __m128i to_int8x16(__m512 v, __m512 lo, __m512 hi, __m512i zero) {
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zero));  // round half to even
}

inline __m512 load16(const int8_t* p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}

}  // namespace

void f32_minmax_ukernel__avx512vnni(size_t n, const float* x, float* lo, float* hi) {
  // min(v, acc) returns acc where v is NaN (or masked off): skipped, as in the scalar kernel
  __m512 l = _mm512_set1_ps(x[0]), h = l;
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(l, m, x + i);  // lanes past n: l itself
    l = _mm512_min_ps(v, l);
    h = _mm512_max_ps(_mm512_mask_mov_ps(h, m, v), h);
  }
  *lo = _mm512_reduce_min_ps(l), *hi = _mm512_reduce_max_ps(h);
}

void qs8_quantize_ukernel__avx512vnni(size_t n, const float* x, int8_t* y, const Qs8QuantizeParams& p) {
  const __m512 s = _mm512_set1_ps(p.inv_scale);
  const __m512 lo = _mm512_set1_ps(p.qmin - p.zero_point), hi = _mm512_set1_ps(p.qmax - p.zero_point);
  const __m512i zero = _mm512_set1_epi32(static_cast<int32_t>(p.zero_point));
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    _mm_mask_storeu_epi8(y + i, m, to_int8x16(v, lo, hi, zero));
  }
}

void qs8_binary_ukernel__avx512vnni(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p) {
  const __m512 as = _mm512_set1_ps(p.a_scale), az = _mm512_set1_ps(p.a_zero);
  const __m512 bs = _mm512_set1_ps(p.b_scale), bz = _mm512_set1_ps(p.b_zero);
  const __m512 ys = _mm512_set1_ps(p.y_inv_scale);
  const __m512 lo = _mm512_set1_ps(p.qmin - p.y_zero), hi = _mm512_set1_ps(p.qmax - p.y_zero);
  const __m512i zero = _mm512_set1_epi32(static_cast<int32_t>(p.y_zero));
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 fa = _mm512_mul_ps(_mm512_sub_ps(load16(a + i, m), az), as);
    const __m512 fb = _mm512_mul_ps(_mm512_sub_ps(load16(b + i, m), bz), bs);
    const __m512 v = _mm512_mul_ps(p.mul ? _mm512_mul_ps(fa, fb) : _mm512_add_ps(fa, fb), ys);
    _mm_mask_storeu_epi8(y + i, m, to_int8x16(v, lo, hi, zero));
  }
}

}  // namespace cpu
}  // namespace tern
