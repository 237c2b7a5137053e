// qs8_igemm_ukernel_6x{16,32,48,64}__avx512vnni (ukernels/qs8.h): VNNI's vpdpbusd adds
// four products of an unsigned and a signed byte to each int32 lane. The
// activations are signed, so each is read as a + 128 (a xor 0x80) and the
// caller's init carries -128 * the column's weight sum (Qs8Kernels::unsigned_a).
// One zmm holds a row's 16 columns; a panel's 4 inputs x 16 columns is one
// 64-byte load.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/ukernels/common/qs8_store_avx512.h"
#include "backends/cpu/ukernels/qs8.h"

// GCC 12 warns inside its own AVX-512 headers (the unmasked forms pass an
// undefined source); a false positive, as in ukernels/avx512/f32_igemm.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

// 6 rows: with 4 panels, 24 accumulators, 4 weight registers and the row's
// broadcast input fit the 32 zmm registers.
template <int kPanels, typename Out>
void igemm(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a, const int8_t* w, Out* c,
           size_t c_stride, const Qs8Requant& rq) {
  constexpr size_t kMr = 6;
  const size_t kc4 = (kc + 3) & ~size_t(3);
  const size_t panel = ks * kc4 * 16;
  __m512i acc[kPanels][kMr];
  for (int p = 0; p < kPanels; ++p) {
    const __m512i init = _mm512_loadu_si512(rq.init + 16 * p);
    for (size_t i = 0; i < kMr; ++i) acc[p][i] = init;
  }
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const size_t kc_full = kc & ~size_t(3);
  for (size_t t = 0; t < ks; ++t) {
    const int8_t* const* x = a + t * kMr;
    const int8_t* wt = w + t * kc4 * 16;
    size_t k = 0;
    for (; k < kc_full; k += 4, wt += 64) {
      __m512i wv[kPanels];
      for (int p = 0; p < kPanels; ++p) wv[p] = _mm512_loadu_si512(wt + p * panel);
      for (size_t i = 0; i < kMr; ++i) {
        int32_t v;
        memcpy(&v, x[i] + k, 4);
        const __m512i xv = _mm512_xor_si512(_mm512_set1_epi32(v), flip);
        for (int p = 0; p < kPanels; ++p) acc[p][i] = _mm512_dpbusd_epi32(acc[p][i], xv, wv[p]);
      }
    }
    if (k < kc) {  // the last 1-3 inputs; the weights past kc are zero
      __m512i wv[kPanels];
      for (int p = 0; p < kPanels; ++p) wv[p] = _mm512_loadu_si512(wt + p * panel);
      for (size_t i = 0; i < kMr; ++i) {
        const __m512i xv = _mm512_xor_si512(_mm512_set1_epi32(qs8_load4(x[i], k, kc)), flip);
        for (int p = 0; p < kPanels; ++p) acc[p][i] = _mm512_dpbusd_epi32(acc[p][i], xv, wv[p]);
      }
    }
  }
  const qs8_avx512::RowStore<kPanels> out(rq, nc);
  for (size_t i = 0; i < mr; ++i) {
    __m512i row[kPanels];
    for (int p = 0; p < kPanels; ++p) row[p] = acc[p][i];
    out.store(row, c + i * c_stride);
  }
}

}  // namespace

void qs8_igemm_ukernel_6x16__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                        const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<1, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_6x16__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                            const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<1, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_ukernel_6x32__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                        const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<2, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_6x32__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                            const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<2, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_ukernel_6x48__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                        const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<3, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_6x48__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                            const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<3, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_ukernel_6x64__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                        const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<4, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_6x64__avx512vnni(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                            const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<4, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

}  // namespace cpu
}  // namespace tern
