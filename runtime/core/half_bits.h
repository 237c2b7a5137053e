// float16 and bfloat16 bits widened to float32, exactly (float16 -> float32
// and bfloat16 -> float32 lose nothing). Integer-only: independent of the
// FPU's rounding mode and flush-to-zero flags. The narrowing direction and
// the storage types the kernels compute with are in
// kernels/portable/util/half.h.
#pragma once

#include <cstdint>
#include <cstring>

namespace tern {

inline uint32_t float_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

inline float bits_float(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  if (e == 0x1Fu) return bits_float(sign | 0x7F800000u | (m << 13));  // inf, NaN (payload kept)
  if (e != 0) return bits_float(sign | ((e + 112u) << 23) | (m << 13));
  // Zero or subnormal: m * 2^-24, exact in float32 (the multiply is by a power of two).
  return bits_float(sign | float_bits(static_cast<float>(m) * 5.9604644775390625e-8f));
}

inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace tern
