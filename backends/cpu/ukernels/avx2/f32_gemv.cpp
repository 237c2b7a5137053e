// f32_igemm_ukernel_1x64__avx2: one output row (a GEMV), up to 4 panels of 2
// ymm each: per k step 1 broadcast, up to 8 weight loads and 8 FMAs, 8
// independent chains; the weights stream once, which bounds the speed.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx2.h"
#include "backends/cpu/ukernels/common/f32_gemv.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {

template <size_t kPanels>
void row_panels(size_t nc, size_t kc, size_t ks, const float* const* a, const float* w, size_t pf, float* c,
                const float* res, MinMax mm) {
  __m256 acc[kPanels][2];
  for (size_t p = 0; p < kPanels; ++p) acc[p][0] = _mm256_loadu_ps(w + p * pf), acc[p][1] = _mm256_loadu_ps(w + p * pf + 8);
  const float* wk = w + kPanel;
  for (size_t t = 0; t < ks; ++t) {
    const float* x = a[t];
    for (size_t k = 0; k < kc; ++k, wk += kPanel) {
      const __m256 xk = _mm256_broadcast_ss(x + k);
      for (size_t p = 0; p < kPanels; ++p) {
        acc[p][0] = _mm256_fmadd_ps(xk, _mm256_loadu_ps(wk + p * pf), acc[p][0]);
        acc[p][1] = _mm256_fmadd_ps(xk, _mm256_loadu_ps(wk + p * pf + 8), acc[p][1]);
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(mm.min), hi = _mm256_set1_ps(mm.max);
  for (size_t p = 0; p < kPanels; ++p) {
    for (size_t h = 0; h < 2; ++h) {
      const size_t first = p * kPanel + h * 8, n = nc > first ? nc - first : 0;
      __m256 v = acc[p][h];
      if (res != nullptr && n > 0) v = _mm256_add_ps(v, load_lanes(res + first, n));
      store_lanes(c + first, _mm256_min_ps(hi, _mm256_max_ps(lo, v)), n);
    }
  }
}

}  // namespace

void f32_igemm_ukernel_1x64__avx2(size_t, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
                                  size_t panel_floats, float* c, size_t, const float* res, MinMax clamp) {
  gemv::by_panels(nc, [&](auto p) { row_panels<decltype(p)::value>(nc, kc, ks, a, w, panel_floats, c, res, clamp); });
}

}  // namespace cpu
}  // namespace tern
