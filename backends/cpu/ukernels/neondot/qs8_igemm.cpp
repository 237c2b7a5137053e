// qs8_igemm_ukernel_4x16__neondot and its float-output twin (ukernels/qs8.h):
// Armv8.2 dot product (SDOT): each int32 lane of a register adds the four
// products of its four int8 weights (one column's 4 consecutive inputs, the
// packed layout) with the row's 4 inputs, broadcast to every lane. Signed
// times signed: no offset to correct. Built with +dotprod and run only when
// the CPU reports it (isa.cpp).
#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// Inputs k..k+3 of a row (zeros past kc), in every lane.
inline int8x16_t load_x4(const int8_t* x, size_t k, size_t kc) {
  return vreinterpretq_s8_s32(vdupq_n_s32(qs8_load4(x, k, kc)));
}

template <typename Out>
void igemm_4x16(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a, const int8_t* w, Out* c,
                size_t c_stride, const Qs8Requant& rq) {
  constexpr size_t kMr = 4;
  int32x4_t acc[kMr][4];
  for (size_t i = 0; i < kMr; ++i) {
    for (int q = 0; q < 4; ++q) acc[i][q] = vld1q_s32(rq.init + 4 * q);
  }
  const size_t kc4 = (kc + 3) & ~size_t(3);
  for (size_t t = 0; t < ks; ++t) {
    const int8_t* const* x = a + t * kMr;
    const int8_t* wt = w + t * kc4 * 16;
    for (size_t k = 0; k < kc; k += 4, wt += 64) {
      const int8x16_t w0 = vld1q_s8(wt), w1 = vld1q_s8(wt + 16), w2 = vld1q_s8(wt + 32), w3 = vld1q_s8(wt + 48);
      for (size_t i = 0; i < kMr; ++i) {
        const int8x16_t xv = load_x4(x[i], k, kc);
        acc[i][0] = vdotq_s32(acc[i][0], w0, xv);
        acc[i][1] = vdotq_s32(acc[i][1], w1, xv);
        acc[i][2] = vdotq_s32(acc[i][2], w2, xv);
        acc[i][3] = vdotq_s32(acc[i][3], w3, xv);
      }
    }
  }
  const float32x4_t qmin = vdupq_n_f32(rq.qmin), qmax = vdupq_n_f32(rq.qmax);
  for (size_t i = 0; i < mr; ++i) {
    float32x4_t v[4];
    for (int q = 0; q < 4; ++q) {
      v[q] = vfmaq_f32(vld1q_f32(rq.offset + 4 * q), vcvtq_f32_s32(acc[i][q]), vld1q_f32(rq.scale + 4 * q));
    }
    if constexpr (sizeof(Out) == 1) {
      int32x4_t r[4];
      for (int q = 0; q < 4; ++q) r[q] = vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(v[q], qmin), qmax));  // NaN -> qmin (qs8.h), half to even
      const int16x8_t lo = vcombine_s16(vqmovn_s32(r[0]), vqmovn_s32(r[1]));
      const int16x8_t hi = vcombine_s16(vqmovn_s32(r[2]), vqmovn_s32(r[3]));
      int8_t tmp[16];
      vst1q_s8(tmp, vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)));
      memcpy(c + i * c_stride, tmp, nc);
    } else {
      float tmp[16];
      for (int q = 0; q < 4; ++q) vst1q_f32(tmp + 4 * q, v[q]);
      memcpy(c + i * c_stride, tmp, nc * sizeof(float));
    }
  }
}

}  // namespace

void qs8_igemm_ukernel_4x16__neondot(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                     const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm_4x16(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_4x16__neondot(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                         const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm_4x16(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

}  // namespace cpu
}  // namespace tern
