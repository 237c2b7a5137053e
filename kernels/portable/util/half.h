// float16 (IEEE 754 binary16) and bfloat16 as 16-bit storage types for the
// portable kernels.
//
// Decisions:
// - Storage only. Half and BFloat16 hold 16 bits and convert implicitly to and
//   from float32, and define no arithmetic operators of their own. So in a
//   kernel templated on T, `T(1) / (T(1) + std::exp(-x))` with T = Half
//   evaluates entirely in float32 (each operand converts to float; std::exp
//   picks its float overload) and rounds once, when the result is stored as
//   a T. This is PyTorch's "opmath" on CPU: compute in float32, round once per
//   op. (c10::Half defines operators that round after every operation; we do
//   not, so a longer expression is more accurate than eager, never less.)
// - Accumulators (sum, mean, norms, softmax, matmul, ...) must not be a T:
//   they use OpMath<T> (float for the two 16-bit types). Half has no +=, so
//   `T acc; acc += x` does not compile for it, which catches most of them.
// - float32 -> float16 rounds to nearest even, overflows to inf (65520 and up,
//   as IEEE), keeps subnormals, NaN stays NaN (quiet, sign kept). float16 ->
//   float32 is exact. Both are integer-only, so they do not depend on the FPU's
//   rounding mode or flush-to-zero flags.
// - bfloat16 is the top half of a float32: float32 -> bfloat16 rounds to
//   nearest even (overflow to inf and subnormals fall out of the integer
//   rounding), NaN becomes the quiet NaN 0x7FC0 with its sign (as c10 does);
//   bfloat16 -> float32 is exact.
// - float64 -> 16-bit converts through float32 (double rounding, as c10's
//   Half(float) constructor does for static_cast<c10::Half>(double)).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/core/half_bits.h"
#include "runtime/core/scalar_type.h"

namespace tern {
namespace portable {

// The exact widenings (16 bits -> float32) are in runtime/core/half_bits.h,
// for readers outside the kernels (the self-test's comparison) too.
using tern::bfloat16_bits_to_float;
using tern::bits_float;
using tern::float_bits;
using tern::half_bits_to_float;

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u;   // NaN -> quiet NaN
  if (ax >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to inf; inf
  if (ax >= 0x38800000u) {                       // normal: >= 2^-14
    // Rebias the exponent (127 -> 15) and round the 13 dropped bits to
    // nearest even; a carry out of the mantissa bumps the exponent, right.
    const uint32_t odd = (ax >> 13) & 1u;
    return sign | static_cast<uint16_t>((ax - (112u << 23) + 0xFFFu + odd) >> 13);
  }
  if (ax < 0x33000000u) return sign;  // below 2^-25 (and +-0): rounds to zero
  // Subnormal: the value in units of 2^-24 is m * 2^(e - 126), e in [102, 112].
  const uint32_t e = ax >> 23;
  const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may reach 0x400, the least normal
  return sign | static_cast<uint16_t>(q);
}

inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7FC0u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}


struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT: implicit, see above
  operator float() const { return half_bits_to_float(bits); }  // NOLINT
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}  // NOLINT
  operator float() const { return bfloat16_bits_to_float(bits); }  // NOLINT
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage");

template <typename T>
constexpr bool kIsHalfType = std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value;

// std::is_floating_point, with the two 16-bit types (std's trait may not be
// specialized for them).
template <typename T>
constexpr bool kIsFloat = std::is_floating_point<T>::value || kIsHalfType<T>;

// The type an op computes and accumulates in for elements of type T.
template <typename T>
using OpMath = std::conditional_t<kIsHalfType<T>, float, T>;

}  // namespace portable

template <> struct ScalarTypeOf<portable::Half> { static constexpr ScalarType value = ScalarType::Float16; };
template <> struct ScalarTypeOf<portable::BFloat16> { static constexpr ScalarType value = ScalarType::BFloat16; };

}  // namespace tern

namespace tern {
namespace portable {
namespace detail {

// numeric_limits of a 16-bit float type T, from its bit patterns.
template <typename T, int kDigits, uint16_t kMin, uint16_t kLowest, uint16_t kMax, uint16_t kEpsilon,
          uint16_t kInf, uint16_t kNaN>
struct Limits16 {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = kDigits;
  static T min() { return T::from_bits(kMin); }
  static T lowest() { return T::from_bits(kLowest); }
  static T max() { return T::from_bits(kMax); }
  static T epsilon() { return T::from_bits(kEpsilon); }
  static T infinity() { return T::from_bits(kInf); }
  static T quiet_NaN() { return T::from_bits(kNaN); }
  static T denorm_min() { return T::from_bits(0x0001); }
};

}  // namespace detail
}  // namespace portable
}  // namespace tern

namespace std {

// Limits of the two 16-bit types, so kernels can write
// std::numeric_limits<T>::infinity() for any floating T.
template <>
class numeric_limits<tern::portable::Half>
    : public tern::portable::detail::Limits16<tern::portable::Half, 11, 0x0400, 0xFBFF, 0x7BFF, 0x1400, 0x7C00,
                                              0x7E00> {};

template <>
class numeric_limits<tern::portable::BFloat16>
    : public tern::portable::detail::Limits16<tern::portable::BFloat16, 8, 0x0080, 0xFF7F, 0x7F7F, 0x3C00, 0x7F80,
                                              0x7FC0> {};

}  // namespace std
