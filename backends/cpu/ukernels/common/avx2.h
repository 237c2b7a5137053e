// Loads and stores of a loop's last, partial vector of 8 floats, shared by
// the files of ukernels/avx2/ (include it from those only). In an unnamed
// namespace: each file keeps its own copy, built with its own flags
// (ukernels/common/avx512.h says why).
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace tern {
namespace cpu {
namespace {

// Lanes < n set (n <= 8): a mask for maskload / maskstore.
inline __m256i lane_mask(size_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes);
}

// Loads 8 lanes, or the first n of them (the rest 0).
inline __m256 load_lanes(const float* p, size_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lane_mask(n));
}

// Stores 8 lanes, or the first n of them.
inline void store_lanes(float* p, __m256 v, size_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
  } else if (n > 0) {
    _mm256_maskstore_ps(p, lane_mask(n), v);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tern
