// qs8_dwconv_ukernel__avx512vnni (ukernels/qs8.h): 16 channels of int32 per
// zmm. Each int8 input, sign-extended to an int32 lane, is one int16 pair
// (value, sign); each weight is the pair (weight, 0), so VNNI's vpdpwssd
// (the sum of the two int16 products, added to the lane) adds input * weight.
// For each block of 16 channels the taps' weights are widened once and kept
// in registers while the kernel walks the pixels.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/qs8.h"

// GCC 12 warns inside its own AVX-512 headers (the unmasked forms pass an
// undefined source); a false positive, as in ukernels/avx512/f32_igemm.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMaxHeldTaps = 25;  // up to 5x5 kernels keep their weights in registers

// 16 int8 of a block (cn of them; zeros above) as int32 lanes.
inline __m512i load16(const int8_t* p, size_t cn) {
  if (cn == 16) return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(tail_mask(cn), p));
}

inline void store16(int8_t* dst, __m512i acc, __m512 scale, __m512 offset, __m512 qmin, __m512 qmax, size_t cn) {
  __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), scale, offset);
  v = _mm512_min_ps(_mm512_max_ps(v, qmin), qmax);
  const __m128i b = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v));  // round half to even
  if (cn == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), b);
  } else {
    _mm_mask_storeu_epi8(dst, tail_mask(cn), b);
  }
}

}  // namespace

void qs8_dwconv_ukernel__avx512vnni(size_t channels, size_t pixels, size_t ks, const int8_t* const* in,
                                    const int8_t* w, int8_t* out, size_t out_stride, const Qs8Requant& rq) {
  const __m512 qmin = _mm512_set1_ps(rq.qmin), qmax = _mm512_set1_ps(rq.qmax);
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  for (size_t c0 = 0; c0 < channels; c0 += 16) {
    const size_t cn = channels - c0 < 16 ? channels - c0 : 16;
    const int8_t* wb = w + (c0 >> 4) * ks * 16;
    const __m512i init = _mm512_loadu_si512(rq.init + c0);
    const __m512 scale = _mm512_loadu_ps(rq.scale + c0), offset = _mm512_loadu_ps(rq.offset + c0);
    if (ks <= kMaxHeldTaps) {
      __m512i wv[kMaxHeldTaps];
      for (size_t t = 0; t < ks; ++t) wv[t] = _mm512_and_si512(load16(wb + t * 16, 16), low16);
      size_t p = 0;
      for (; p + 4 <= pixels; p += 4) {  // 4 pixels at a time: 4 independent sums (a sum alone waits on
        const int8_t* const* taps = in + p * ks;  // each vpdpwssd's latency)
        __m512i acc[4] = {init, init, init, init};
        for (size_t t = 0; t < ks; ++t) {
          for (size_t j = 0; j < 4; ++j) acc[j] = _mm512_dpwssd_epi32(acc[j], load16(taps[j * ks + t] + c0, cn), wv[t]);
        }
        for (size_t j = 0; j < 4; ++j) store16(out + (p + j) * out_stride + c0, acc[j], scale, offset, qmin, qmax, cn);
      }
      for (; p < pixels; ++p) {
        const int8_t* const* taps = in + p * ks;
        __m512i acc = init;
        for (size_t t = 0; t < ks; ++t) acc = _mm512_dpwssd_epi32(acc, load16(taps[t] + c0, cn), wv[t]);
        store16(out + p * out_stride + c0, acc, scale, offset, qmin, qmax, cn);
      }
    } else {
      for (size_t p = 0; p < pixels; ++p) {
        const int8_t* const* taps = in + p * ks;
        __m512i acc = init;
        for (size_t t = 0; t < ks; ++t) {
          acc = _mm512_dpwssd_epi32(acc, load16(taps[t] + c0, cn), _mm512_and_si512(load16(wb + t * 16, 16), low16));
        }
        store16(out + p * out_stride + c0, acc, scale, offset, qmin, qmax, cn);
      }
    }
  }
}

}  // namespace cpu
}  // namespace tern
