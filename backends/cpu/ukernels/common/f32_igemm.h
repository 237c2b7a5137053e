// The k loop of the float igemm microkernels (ukernels/<isa>/f32_igemm.cpp;
// not avx2's, which has its own: avx2/f32_igemm.cpp says why), written once
// and compiled into each with its flags: for each tap t < ks,
// tap t's kMr row pointers, then step(ap, k, wk) for each input k < kc, wk
// being the weights of k (one panel row, kPanel floats; a kernel wider than
// a panel reads the next panels at wk + p * panel_floats). Unrolled by 4 so
// that the pointers advance once per 4 steps; the last kc % 4 one by one.
//   w: the panel's first weight row, after its bias (ukernels.h's layout)
#pragma once

#include <cstddef>

#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)

template <size_t kMr, typename Step>
inline void igemm_k_loop(size_t kc, size_t ks, const float* const* a, const float* w, Step&& step) {
  for (size_t t = 0; t < ks; ++t) {
    const float* ap[kMr];
    for (size_t i = 0; i < kMr; ++i) ap[i] = a[t * kMr + i];
    size_t k = 0;
    for (; k + 4 <= kc; k += 4, w += 4 * kPanel) {
      step(ap, k, w);
      step(ap, k + 1, w + kPanel);
      step(ap, k + 2, w + 2 * kPanel);
      step(ap, k + 3, w + 3 * kPanel);
    }
    for (; k < kc; ++k, w += kPanel) step(ap, k, w);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tern
