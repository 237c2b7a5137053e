// Size arithmetic that reports overflow instead of wrapping. Every size read
// from a file goes through these.
#pragma once

#include <cstdint>

namespace tern {

// *out = a * b; returns false (and leaves *out unspecified) on overflow.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
// *out = a + b; returns false on overflow.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

}  // namespace tern
