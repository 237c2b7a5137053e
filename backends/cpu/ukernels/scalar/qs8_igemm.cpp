// qs8_igemm_ukernel_4x16__scalar and qs8_dwconv_ukernel__scalar: the
// reference int8 microkernels (ukernels/qs8.h), plain C++. Always built; the
// other ISAs write the same bytes.
#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {

namespace {

// int8 output (requantized) or float32 (scaled, biased)
template <typename Out>
void igemm_4x16(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a, const int8_t* w, Out* c,
                size_t c_stride, const Qs8Requant& rq) {
  constexpr size_t kMr = 4;
  const size_t kc4 = (kc + 3) & ~size_t(3);
  for (size_t i = 0; i < mr; ++i) {
    int32_t acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = rq.init[j];
    for (size_t t = 0; t < ks; ++t) {
      const int8_t* x = a[t * kMr + i];
      const int8_t* wt = w + t * kc4 * 16;
      for (size_t k = 0; k < kc; ++k) {
        const int32_t xv = x[k];
        const int8_t* wk = wt + (k >> 2) * 64 + (k & 3);
        for (int j = 0; j < 16; ++j) acc[j] += xv * wk[4 * j];
      }
    }
    for (size_t j = 0; j < nc; ++j) {
      if constexpr (sizeof(Out) == 1) {
        c[i * c_stride + j] = qs8_requant(acc[j], rq.scale[j], rq.offset[j], rq.qmin, rq.qmax);
      } else {
        c[i * c_stride + j] = __builtin_fmaf(static_cast<float>(acc[j]), rq.scale[j], rq.offset[j]);
      }
    }
  }
}

}  // namespace

void qs8_igemm_ukernel_4x16__scalar(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                    const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm_4x16(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_4x16__scalar(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                        const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm_4x16(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_dwconv_ukernel__scalar(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const int8_t* w,
                                int8_t* out, size_t out_stride, const Qs8Requant& rq) {
  for (size_t p = 0; p < pixels; ++p) {
    for (size_t j = 0; j < channels; ++j) {
      const int8_t* wj = w + (j >> 4) * ks * 16 + (j & 15);
      int32_t acc = rq.init[j];
      for (size_t t = 0; t < ks; ++t) acc += int32_t(in[p * ks + t][j]) * wj[t * 16];
      out[p * out_stride + j] = qs8_requant(acc, rq.scale[j], rq.offset[j], rq.qmin, rq.qmax);
    }
  }
}

}  // namespace cpu
}  // namespace tern
