// The AVX-512 igemm kernels' last step (avx512vnni, amx), one output row
// at a time: a row's int32 sums of up to 4 panels (16 columns each),
// requantized (ukernels/qs8.h: fma(float(acc), scale, offset), clamped,
// rounded half to even) into nc int8, or scaled into nc floats. Included by
// files built with AVX-512 F, BW and VL.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace qs8_avx512 {

template <int kPanels>
struct RowStore {
  __m512 scale[kPanels], offset[kPanels], qmin, qmax;
  __m512i order;
  size_t nc;

  explicit RowStore(const Qs8Requant& rq, size_t columns) : nc(columns) {
    for (int p = 0; p < kPanels; ++p) scale[p] = _mm512_loadu_ps(rq.scale + 16 * p), offset[p] = _mm512_loadu_ps(rq.offset + 16 * p);
    qmin = _mm512_set1_ps(rq.qmin), qmax = _mm512_set1_ps(rq.qmax);
    order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  }

  // The panels packed into one zmm of up to 64 int8 (the values are clamped
  // already: the saturating packs do not change them), one store. The packs
  // work within 128-bit lanes: lane l holds 4 columns of each panel in turn;
  // the permute puts each panel's 16 columns back together.
  void store(const __m512i* acc, int8_t* dst) const {
    __m512i r[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int p = 0; p < kPanels; ++p) {
      const __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[p]), scale[p], offset[p]);
      r[p] = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, qmin), qmax));  // round half to even
    }
    const __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(r[0], r[1]), _mm512_packs_epi32(r[2], r[3]));
    _mm512_mask_storeu_epi8(dst, tail_mask64(nc), _mm512_permutexvar_epi32(order, b));
  }

  // Float output (a dynamically quantized linear layer): fma only.
  void store(const __m512i* acc, float* dst) const {
    for (int p = 0; p < kPanels && size_t(16 * p) < nc; ++p) {
      const size_t n = nc - 16 * p < 16 ? nc - 16 * p : 16;
      const __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[p]), scale[p], offset[p]);
      _mm512_mask_storeu_ps(dst + 16 * p, tail_mask(n), v);
    }
  }
};

}  // namespace qs8_avx512
}  // namespace
}  // namespace cpu
}  // namespace tern
