// f32_vact_ukernel__avx2: sigmoid, silu and gelu written with AVX2 + FMA
// intrinsics; tanh, exp and hardswish as ukernels/common/f32_vact.h has them
// (vectorized by the compiler for this file's ISA).
//
// The avx512 kernel's scheme (avx512/f32_vact.cpp says why) with what AVX2
// lacks done by hand:
//   - exp(z) only for z <= 0, z >= -87.3 so that 2^n stays a normal float,
//     built in the exponent bits (at the floor, e = 1.2e-38 where it would
//     be smaller: sigmoid 1.2e-38 instead of less, far inside tolerance);
//   - 1 / d from vrcpps (relative error under 1.5 * 2^-12) and one Newton
//     step (under 2^-22).
// NaN in gives NaN out: max(c, z) passes z's NaN on.
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/ukernels/common/avx2.h"
#include "backends/cpu/ukernels/common/f32_vact.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {

inline __m256 sign_bit(__m256 a) { return _mm256_and_ps(a, _mm256_set1_ps(-0.f)); }

// exp(z) for z <= 0 (or NaN), in base 2: t = z log2(e) = n + f, |f| <= 1/2,
// 2^f by its Taylor polynomial of degree 6, times 2^n from the exponent bits.
inline __m256 exp_nonpositive(__m256 z) {
  const __m256 t = _mm256_mul_ps(_mm256_max_ps(_mm256_set1_ps(-87.3f), z), _mm256_set1_ps(1.44269504088896341f));
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(t, n);
  __m256 p = _mm256_set1_ps(1.5403530393e-4f);  // ln2^k / k!, k = 6 down to 0
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108665e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650696e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718056e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.f));
  // n in [-126, 0] (NaN converts to INT32_MIN: its bits are lost below, but
  // p is NaN then and so is the product)
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// 1 / d for d >= 1
inline __m256 reciprocal(__m256 d) {
  const __m256 r = _mm256_rcp_ps(d);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.f)));
}

inline __m256 sigmoid(__m256 x) {
  const __m256 e = exp_nonpositive(_mm256_or_ps(x, _mm256_set1_ps(-0.f)));  // exp(-|x|)
  const __m256 r = reciprocal(_mm256_add_ps(e, _mm256_set1_ps(1.f)));
  const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(r, _mm256_mul_ps(r, e), negative);
}

// 0.5 x (1 + erf(x / sqrt 2)), erf as the common header's (A&S 7.1.26)
inline __m256 gelu(__m256 x) {
  const __m256 s = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.f), s);  // |s|
  const __m256 t = reciprocal(_mm256_fmadd_ps(a, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.f)));
  __m256 poly = _mm256_set1_ps(1.061405429f);
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-1.453152027f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(1.421413741f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-0.284496736f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(0.254829592f));
  poly = _mm256_mul_ps(poly, t);
  // erf(|s|) = 1 - poly e^{-s^2}; erf(s) takes s's sign
  const __m256 erf_abs = _mm256_fnmadd_ps(poly, exp_nonpositive(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), a), a)),
                                          _mm256_set1_ps(1.f));
  const __m256 erf = _mm256_or_ps(erf_abs, sign_bit(s));
  const __m256 half_x = _mm256_mul_ps(x, _mm256_set1_ps(0.5f));
  return _mm256_fmadd_ps(half_x, erf, half_x);
}

template <int kKind>
inline __m256 act(__m256 x) {
  if constexpr (kKind == 0) return sigmoid(x);
  if constexpr (kKind == 2) return gelu(x);
  return _mm256_mul_ps(x, sigmoid(x));  // silu
}

template <int kKind>
void apply(float* v, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {  // two vectors a step: independent chains
    const __m256 a = act<kKind>(_mm256_loadu_ps(v + i));
    const __m256 b = act<kKind>(_mm256_loadu_ps(v + i + 8));
    _mm256_storeu_ps(v + i, a);
    _mm256_storeu_ps(v + i + 8, b);
  }
  for (; i < n; i += 8) store_lanes(v + i, act<kKind>(load_lanes(v + i, n - i)), n - i);
}

}  // namespace

void f32_vact_ukernel__avx2(int kind, float* v, size_t n) {
  switch (kind) {
    case 0: apply<0>(v, n); break;
    case 2: apply<2>(v, n); break;
    case 3: apply<3>(v, n); break;
    default: vact::apply(kind, v, n); break;
  }
}

}  // namespace cpu
}  // namespace tern
