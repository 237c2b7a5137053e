// Checks on what is read from a file: size arithmetic that reports overflow
// instead of wrapping (every size read from a file goes through these), and
// the alignment of items read in place.
#pragma once

#include <cstdint>
#include <type_traits>

namespace tern {

// *out = a * b; returns false (and leaves *out unspecified) on overflow.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
// *out = a + b; returns false on overflow.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}


// Whether the items of a vector read in place from a file (anything whose
// data() returns const T*, such as a flatbuffers::Vector<T>) sit at T's
// alignment; a missing (null) vector passes. FlatBuffers verification checks
// the alignment of a vector's length, not of its items: the 8-byte items of a
// crafted file can be only 4-aligned, and reading them would be a misaligned
// load.
template <typename V>
bool items_aligned(const V* v) {
  if (v == nullptr) return true;
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(v->data())>>;
  return reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

}  // namespace tern
