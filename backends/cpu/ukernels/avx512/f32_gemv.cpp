// f32_igemm_ukernel_1x64__avx512: one output row (a GEMV), up to 4 panels.
// Per pair of k steps: 2 broadcasts, up to 8 weight loads, 8 FMAs into two
// accumulator sets (even and odd k), so 8 independent chains cover the FMA
// latency; the weights stream once, which bounds the speed.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/common/f32_gemv.h"
#include "backends/cpu/ukernels/ukernels.h"

// GCC 12 reports the "undefined" pass-through operand inside the
// _mm512_{min,max}_ps builtins as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

template <size_t kPanels>
void row_panels(size_t nc, size_t kc, size_t ks, const float* const* a, const float* w, size_t pf, float* c,
                const float* res, MinMax mm) {
  __m512 even[kPanels], odd[kPanels];
  for (size_t p = 0; p < kPanels; ++p) even[p] = _mm512_loadu_ps(w + p * pf), odd[p] = _mm512_setzero_ps();
  const float* wk = w + kPanel;
  for (size_t t = 0; t < ks; ++t) {
    const float* x = a[t];
    size_t k = 0;
    for (; k + 2 <= kc; k += 2, wk += 2 * kPanel) {
      const __m512 x0 = _mm512_set1_ps(x[k]), x1 = _mm512_set1_ps(x[k + 1]);
      for (size_t p = 0; p < kPanels; ++p) {
        even[p] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(wk + p * pf), even[p]);
        odd[p] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(wk + p * pf + kPanel), odd[p]);
      }
    }
    for (; k < kc; ++k, wk += kPanel) {
      const __m512 x0 = _mm512_set1_ps(x[k]);
      for (size_t p = 0; p < kPanels; ++p) even[p] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(wk + p * pf), even[p]);
    }
  }
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  for (size_t p = 0; p < kPanels; ++p) {
    const size_t n = nc > p * kPanel ? nc - p * kPanel : 0;
    __m512 v = _mm512_add_ps(even[p], odd[p]);
    if (res != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(tail_mask(n), res + p * kPanel));
    v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    _mm512_mask_storeu_ps(c + p * kPanel, tail_mask(n), v);
  }
}

}  // namespace

void f32_igemm_ukernel_1x64__avx512(size_t, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
                                    size_t panel_floats, float* c, size_t, const float* res, MinMax clamp) {
  gemv::by_panels(nc, [&](auto p) { row_panels<decltype(p)::value>(nc, kc, ks, a, w, panel_floats, c, res, clamp); });
}

}  // namespace cpu
}  // namespace tern
