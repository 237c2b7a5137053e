// Depthwise convolution of one output row's interior pixels (those whose
// taps all fall inside the input horizontally), NHWC, written for the
// compiler to vectorize over 16 channels for the ISA of the file that
// includes it (ukernels/<isa>/f32_dwconv_rows.cpp). No per-pixel pointers:
// tap (ki, kj) of the p-th pixel reads rows[ki] + p * step + kj * dil.
//
//   rows[ki], ki in [ki0, ki1): input row ki's pixel under tap (ki, 0) of
//     the first output pixel; rows outside [ki0, ki1) are padding (skipped)
//   step: floats between the input pixels of consecutive outputs (sw * c)
//   dil:  floats between the taps of one row (dw * c)
#pragma once

#include <cstddef>

#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace dwrows {

// One block of 16 channels from c0 over the row's pixels: all 16 (kFull,
// what the compiler vectorizes best) or the first cn, the last block's.
template <size_t kKw, bool kFull>
void block(size_t c0, size_t cn, size_t pixels, size_t kw_rt, size_t ki0, size_t ki1, const float* const* rows,
           size_t step, size_t dil, const float* w, float* out, size_t out_stride, MinMax mm) {
  const size_t kw = kKw ? kKw : kw_rt;
  const size_t n = kFull ? size_t(kPanel) : cn;
  for (size_t p = 0; p < pixels; ++p) {
    float acc[kPanel];
    for (size_t j = 0; j < size_t(kPanel); ++j) acc[j] = w[j];
    for (size_t ki = ki0; ki < ki1; ++ki) {
      const float* x = rows[ki] + p * step + c0;
      const float* wt = w + kPanel * (1 + ki * kw);
      for (size_t kj = 0; kj < kw; ++kj, x += dil, wt += kPanel) {
        for (size_t j = 0; j < size_t(kPanel); ++j) acc[j] += (kFull || j < cn ? x[j] : 0.f) * wt[j];
      }
    }
    float* o = out + p * out_stride + c0;
    for (size_t j = 0; j < n; ++j) o[j] = acc[j] < mm.min ? mm.min : (acc[j] > mm.max ? mm.max : acc[j]);
  }
}

// All channels: full 16-channel blocks vectorized, a tail block masked.
inline void run(size_t channels, size_t pixels, size_t kh, size_t kw, size_t ki0, size_t ki1,
                const float* const* rows, size_t step, size_t dil, const float* w, float* out, size_t out_stride,
                MinMax mm) {
  (void)kh;
  const size_t block_floats = kPanel * (1 + kh * kw);
  for (size_t c0 = 0; c0 < channels; c0 += kPanel, w += block_floats) {
    const size_t cn = channels - c0 < size_t(kPanel) ? channels - c0 : size_t(kPanel);
    if (cn < size_t(kPanel)) {
      block<0, false>(c0, cn, pixels, kw, ki0, ki1, rows, step, dil, w, out, out_stride, mm);
    } else if (kw == 3) {
      block<3, true>(c0, cn, pixels, kw, ki0, ki1, rows, step, dil, w, out, out_stride, mm);
    } else if (kw == 5) {
      block<5, true>(c0, cn, pixels, kw, ki0, ki1, rows, step, dil, w, out, out_stride, mm);
    } else {
      block<0, true>(c0, cn, pixels, kw, ki0, ki1, rows, step, dil, w, out, out_stride, mm);
    }
  }
}

}  // namespace dwrows
}  // namespace
}  // namespace cpu
}  // namespace tern
