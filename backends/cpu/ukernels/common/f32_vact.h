// Activations over float arrays written so that the compiler vectorizes them
// for the ISA of the file that includes this header (ukernels/<isa>/f32_vact.cpp):
// no calls into libm, no branches in the loops. exp is computed by range
// reduction (x = n ln2 + r, |r| <= ln2 / 2) and a degree-6 polynomial for
// e^r, then 2^n built in the exponent bits: relative error under 2e-7 on
// [-87, 88]; below that range 0, above it exp(88). erf is Abramowitz & Stegun 7.1.26
// (absolute error under 1.5e-7).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace vact {

inline float exp_approx(float in) {
  // NaN takes the path of 0 (its int conversion below would be undefined)
  // and comes back as itself; selects only, so the loops still vectorize.
  const float x = in < -87.f ? -87.f : (in > 88.f ? 88.f : (in == in ? in : 0.f));
  // n = round(x / ln2) by the 1.5 * 2^23 trick: adds and subtracts only, so
  // it vectorizes (floorf does not without -fno-trapping-math)
  const float n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;
  const float r = x - n * 0.693359375f - n * -2.12194440e-4f;  // ln2 in two parts
  float p = 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof(scale));
  // below -87 the result is under 1.7e-38: 0 (exp(-inf) = 0)
  return in < -87.f ? 0.f : (in == in ? p * scale : in);
}

inline float sigmoid(float x) { return 1.f / (1.f + exp_approx(-x)); }

inline float tanh_approx(float x) {
  const float e = exp_approx(2.f * x);
  return (e - 1.f) / (e + 1.f);
}

inline float erf_approx(float x) {
  const float a = x < 0.f ? -x : x;
  const float t = 1.f / (1.f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float y = 1.f - poly * exp_approx(-a * a);
  return x < 0.f ? -y : y;
}

inline float hardswish(float x) {
  const float r = x + 3.f;
  return x * (r < 0.f ? 0.f : (r > 6.f ? 6.f : r)) * (1.f / 6.f);
}

// kind: 0 sigmoid, 1 tanh, 2 gelu (erf), 3 silu, 4 exp, 5 hardswish. v[i] = f(v[i]), i < n.
inline void apply(int kind, float* v, size_t n) {
  switch (kind) {
    case 0: for (size_t i = 0; i < n; ++i) v[i] = sigmoid(v[i]); break;
    case 1: for (size_t i = 0; i < n; ++i) v[i] = tanh_approx(v[i]); break;
    case 2: for (size_t i = 0; i < n; ++i) v[i] = 0.5f * v[i] * (1.f + erf_approx(v[i] * 0.70710678118654752f)); break;
    case 3: for (size_t i = 0; i < n; ++i) v[i] = v[i] * sigmoid(v[i]); break;
    case 4: for (size_t i = 0; i < n; ++i) v[i] = exp_approx(v[i]); break;
    default: for (size_t i = 0; i < n; ++i) v[i] = hardswish(v[i]); break;
  }
}

}  // namespace vact
}  // namespace
}  // namespace cpu
}  // namespace tern
