// Pooling over pixels of c channels, written so that the compiler vectorizes
// it for the ISA of the file that includes this header
// (ukernels/<isa>/f32_pool.cpp). Per output pixel p, over its taps t < taps:
//   scale == nullptr: out[p][ch] = max_t in[p * taps + t][ch], NaN if any is NaN
//   else:             out[p][ch] = scale[p] * sum_t in[p * taps + t][ch]
// Callers point a max's padding taps at one of the pixel's own taps and an
// average's at zeros.
#pragma once

#include <cstddef>

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace pool {

inline void apply(size_t c, size_t pixels, size_t taps, const float* const* in, const float* scale, float* out,
                  size_t out_stride) {
  for (size_t p = 0; p < pixels; ++p, in += taps, out += out_stride) {
    float* __restrict o = out;
    const float* __restrict first = in[0];
    for (size_t ch = 0; ch < c; ++ch) o[ch] = first[ch];
    for (size_t t = 1; t < taps; ++t) {
      const float* __restrict x = in[t];
      if (scale == nullptr) {
        // x > o, or x is NaN: NaN wins, as in torch
        for (size_t ch = 0; ch < c; ++ch) o[ch] = (x[ch] > o[ch] || x[ch] != x[ch]) ? x[ch] : o[ch];
      } else {
        for (size_t ch = 0; ch < c; ++ch) o[ch] += x[ch];
      }
    }
    if (scale != nullptr) {
      const float s = scale[p];
      for (size_t ch = 0; ch < c; ++ch) o[ch] *= s;
    }
  }
}

}  // namespace pool
}  // namespace
}  // namespace cpu
}  // namespace tern
