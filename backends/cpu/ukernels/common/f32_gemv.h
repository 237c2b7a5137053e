// One output row of the igemm (ukernels.h), a GEMV: 1 row x up to kMaxPanels
// panels, written once in plain C++ and compiled per ISA (scalar, neon; avx2
// and avx512 take by_panels only).
// Two accumulator sets over even and odd k give the FMA pipes independent
// chains; the row's weights are read once, so speed is bounded by how fast
// they stream from cache.
#pragma once

#include <cstddef>
#include <type_traits>

#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace gemv {

constexpr size_t kMaxPanels = 4;

template <size_t kPanels>
void panels(size_t nc, size_t kc, size_t ks, const float* const* a, const float* w, size_t panel_floats, float* c,
            const float* res, MinMax mm) {
  float even[kPanels][kPanel], odd[kPanels][kPanel];
  for (size_t p = 0; p < kPanels; ++p) {
    for (int l = 0; l < kPanel; ++l) even[p][l] = w[p * panel_floats + l], odd[p][l] = 0.f;
  }
  const float* wk = w + kPanel;  // tap t, input k of panel p: wk[p * panel_floats + (t * kc + k) * kPanel]
  for (size_t t = 0; t < ks; ++t) {
    const float* x = a[t];
    size_t k = 0;
    for (; k + 2 <= kc; k += 2, wk += 2 * kPanel) {
      const float x0 = x[k], x1 = x[k + 1];
      for (size_t p = 0; p < kPanels; ++p) {
        const float* wp = wk + p * panel_floats;
        for (int l = 0; l < kPanel; ++l) even[p][l] += x0 * wp[l], odd[p][l] += x1 * wp[kPanel + l];
      }
    }
    for (; k < kc; ++k, wk += kPanel) {
      for (size_t p = 0; p < kPanels; ++p) {
        for (int l = 0; l < kPanel; ++l) even[p][l] += x[k] * wk[p * panel_floats + l];
      }
    }
  }
  for (size_t j = 0; j < nc; ++j) {
    const float v = even[j / kPanel][j % kPanel] + odd[j / kPanel][j % kPanel] + (res != nullptr ? res[j] : 0.f);
    c[j] = v < mm.min ? mm.min : (v > mm.max ? mm.max : v);
  }
}

// f(std::integral_constant<size_t, p>()) for the p panels of nc columns (1
// to kMaxPanels): how each ISA's row kernel picks the body unrolled for p.
template <typename F>
inline void by_panels(size_t nc, F&& f) {
  switch ((nc + kPanel - 1) / kPanel) {
    case 1: f(std::integral_constant<size_t, 1>()); break;
    case 2: f(std::integral_constant<size_t, 2>()); break;
    case 3: f(std::integral_constant<size_t, 3>()); break;
    default: f(std::integral_constant<size_t, kMaxPanels>()); break;
  }
}

// The igemm signature with mr = 1 and nc <= kMaxPanels * kPanel.
inline void row(size_t, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w, size_t panel_floats,
                float* c, size_t, const float* res, MinMax mm) {
  by_panels(nc, [&](auto p) { panels<decltype(p)::value>(nc, kc, ks, a, w, panel_floats, c, res, mm); });
}

}  // namespace gemv
}  // namespace
}  // namespace cpu
}  // namespace tern
