// f32_vact_ukernel__avx512: sigmoid, silu and gelu written with AVX-512
// intrinsics; tanh, exp and hardswish as ukernels/common/f32_vact.h has them
// (vectorized by the compiler for this file's ISA).
//
// The compiler's vectorization of the common header spends most of its time
// in a division and in the selects that keep exp's input in range. Here:
//   - exp(z) only for z <= 0: sigmoid(x) = 1 / (1 + e) for x >= 0 and
//     e / (1 + e) for x < 0, with e = exp(-|x|), so nothing overflows;
//   - z >= -87.3, so that e stays a normal float (1.2e-38 at the floor, where
//     it would be smaller: far inside tolerance): results below that were
//     denormals, which cost this machine (Zen 4) a microcode assist each, and
//     a Llama MLP's gate projection three times its time;
//   - 2^n applied by vscalefps;
//   - 1 / d from vrcp14ps (relative error under 2^-14) and one Newton step
//     (under 2^-27): the division's result to within an ulp or two.
// NaN in gives NaN out: max(c, z) passes z's NaN on, and every later step
// keeps it. Against libm (tests/cpp/cpu_conv_test.cpp, CpuVact) these stay
// within the common header's 2e-6 * (1 + |f(x)|) over the float range.
// silu went from about 26 to 11 cycles per 16 floats (conv_bench, a 1x1
// convolution 40->240 on 28x28 with silu against relu6, 1 thread, Zen 4).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/common/f32_vact.h"
#include "backends/cpu/ukernels/ukernels.h"

// GCC 12 reports the "undefined" pass-through operand inside the masked and
// rounding builtins as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

// Bitwise ops on floats with AVX-512F alone (the _ps forms are AVX-512DQ).
inline __m512 or_bits(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
inline __m512 sign_bit(__m512 a) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)));
}
inline __m512 abs_value(__m512 a) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MAX)));
}

// exp(z) for z <= 0 (or NaN), in base 2: t = z log2(e) = n + f with n an
// integer and |f| <= 1/2, 2^f by its Taylor polynomial of degree 6
// (relative error under 1.3e-7), then scalef by n. Two operations fewer
// than reducing by n ln2 in two parts; t's rounding (under 2^-24 |t|) is a
// relative error of e under 1e-5 only where e < 2^-100, nothing in a sum
// with 1.
inline __m512 exp_nonpositive(__m512 z) {
  const __m512 t = _mm512_mul_ps(_mm512_max_ps(_mm512_set1_ps(-87.3f), z), _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.5403530393e-4f);  // ln2^k / k!, k = 6 down to 0
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108665e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650696e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718056e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

// 1 / d for d >= 1
inline __m512 reciprocal(__m512 d) {
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.f)));
}

inline __m512 sigmoid(__m512 x) {
  const __m512 e = exp_nonpositive(or_bits(x, _mm512_set1_ps(-0.f)));  // exp(-|x|)
  const __m512 r = reciprocal(_mm512_add_ps(e, _mm512_set1_ps(1.f)));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(r, negative, r, e);
}

// 0.5 x (1 + erf(x / sqrt 2)), erf as the common header's (A&S 7.1.26)
inline __m512 gelu(__m512 x) {
  const __m512 s = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 a = abs_value(s);
  const __m512 t = reciprocal(_mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.f)));
  __m512 poly = _mm512_set1_ps(1.061405429f);
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-1.453152027f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(1.421413741f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-0.284496736f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(0.254829592f));
  poly = _mm512_mul_ps(poly, t);
  // erf(|s|) = 1 - poly e^{-s^2}; erf(s) takes s's sign
  const __m512 erf_abs = _mm512_fnmadd_ps(poly, exp_nonpositive(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a)),
                                          _mm512_set1_ps(1.f));
  const __m512 erf = or_bits(erf_abs, sign_bit(s));
  const __m512 half_x = _mm512_mul_ps(x, _mm512_set1_ps(0.5f));
  return _mm512_fmadd_ps(half_x, erf, half_x);
}

template <int kKind>
inline __m512 act(__m512 x) {
  if constexpr (kKind == 0) return sigmoid(x);
  if constexpr (kKind == 2) return gelu(x);
  return _mm512_mul_ps(x, sigmoid(x));  // silu
}

template <int kKind>
void apply(float* v, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two vectors a step: independent chains
    const __m512 a = act<kKind>(_mm512_loadu_ps(v + i));
    const __m512 b = act<kKind>(_mm512_loadu_ps(v + i + 16));
    _mm512_storeu_ps(v + i, a);
    _mm512_storeu_ps(v + i + 16, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(v + i, m, act<kKind>(_mm512_maskz_loadu_ps(m, v + i)));
  }
}

}  // namespace

void f32_vact_ukernel__avx512(int kind, float* v, size_t n) {
  switch (kind) {
    case 0: apply<0>(v, n); break;
    case 2: apply<2>(v, n); break;
    case 3: apply<3>(v, n); break;
    default: vact::apply(kind, v, n); break;
  }
}

}  // namespace cpu
}  // namespace tern
