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

// The sizes of a tensor read from a file, checked once for everything later
// computed from them: each size is at least 0, and `unit` times the product
// of the sizes with each 0 counted as 1 (the span) is at most `limit`. Then
// no product of sizes (a stride, an element or byte count) overflows, not
// even in an empty tensor, whose other sizes a plain product would hide.
// size_at(d) is dim d's size. Returns -1 and sets *total (unit * elements:
// 0 when a size is 0), or returns the first dim that is negative or takes
// the span past the limit.
template <typename SizeAt>
int checked_span(int dim, SizeAt size_at, uint64_t unit, uint64_t limit, uint64_t* total) {
  uint64_t span = unit;
  bool empty = false;
  for (int d = 0; d < dim; ++d) {
    const int64_t s = size_at(d);
    if (s < 0 || !checked_mul(span, static_cast<uint64_t>(s == 0 ? 1 : s), &span) || span > limit) return d;
    empty = empty || s == 0;
  }
  *total = empty ? 0 : span;
  return -1;
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
