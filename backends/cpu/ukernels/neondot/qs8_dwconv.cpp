// qs8_dwconv_ukernel__neondot (ukernels/qs8.h): 16 channels a step, in four
// int32x4 accumulators. Per tap, vmull_s8 multiplies 8 inputs by 8 weights
// into int16 (|x * w| <= 128 * 128 fits) and vaddw widens them into the
// int32 sums. Each block of 16 channels is walked over all the pixels, so its
// weights and requantization parameters stay in cache and registers.
#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// acc + x * w for 16 channels.
inline void mac16(int32x4_t acc[4], int8x16_t x, int8x16_t w) {
  const int16x8_t lo = vmull_s8(vget_low_s8(x), vget_low_s8(w));
  const int16x8_t hi = vmull_high_s8(x, w);
  acc[0] = vaddw_s16(acc[0], vget_low_s16(lo));
  acc[1] = vaddw_high_s16(acc[1], lo);
  acc[2] = vaddw_s16(acc[2], vget_low_s16(hi));
  acc[3] = vaddw_high_s16(acc[3], hi);
}

}  // namespace

void qs8_dwconv_ukernel__neondot(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const int8_t* w,
                                 int8_t* out, size_t out_stride, const Qs8Requant& rq) {
  const float32x4_t qmin = vdupq_n_f32(rq.qmin), qmax = vdupq_n_f32(rq.qmax);
  for (size_t c0 = 0; c0 < channels; c0 += 16) {
    const size_t cn = channels - c0 < 16 ? channels - c0 : 16;
    const int8_t* wb = w + (c0 >> 4) * ks * 16;
    // The last block's parameters through a zero-padded copy: rq's arrays
    // need only cover the channels.
    int32_t init_tail[16] = {};
    float scale_tail[16] = {}, offset_tail[16] = {};
    const int32_t* init = rq.init + c0;
    const float *scale = rq.scale + c0, *offset = rq.offset + c0;
    if (cn < 16) {
      memcpy(init_tail, init, cn * sizeof(int32_t));
      memcpy(scale_tail, scale, cn * sizeof(float));
      memcpy(offset_tail, offset, cn * sizeof(float));
      init = init_tail, scale = scale_tail, offset = offset_tail;
    }
    int32x4_t init_v[4];
    float32x4_t scale_v[4], offset_v[4];
    for (int q = 0; q < 4; ++q) {
      init_v[q] = vld1q_s32(init + 4 * q);
      scale_v[q] = vld1q_f32(scale + 4 * q);
      offset_v[q] = vld1q_f32(offset + 4 * q);
    }
    for (size_t p = 0; p < pixels; ++p) {
      const int8_t* const* taps = in + p * ks;
      int32x4_t acc[4] = {init_v[0], init_v[1], init_v[2], init_v[3]};
      if (cn == 16) {
        for (size_t t = 0; t < ks; ++t) mac16(acc, vld1q_s8(taps[t] + c0), vld1q_s8(wb + t * 16));
      } else {  // no read past the row's last channel
        for (size_t t = 0; t < ks; ++t) {
          int8_t tmp[16] = {};
          memcpy(tmp, taps[t] + c0, cn);
          mac16(acc, vld1q_s8(tmp), vld1q_s8(wb + t * 16));
        }
      }
      int32x4_t r[4];
      for (int q = 0; q < 4; ++q) {
        const float32x4_t v = vfmaq_f32(offset_v[q], vcvtq_f32_s32(acc[q]), scale_v[q]);
        r[q] = vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(v, qmin), qmax));  // NaN -> qmin (qs8.h), half to even
      }
      const int16x8_t lo = vcombine_s16(vqmovn_s32(r[0]), vqmovn_s32(r[1]));
      const int16x8_t hi = vcombine_s16(vqmovn_s32(r[2]), vqmovn_s32(r[3]));
      const int8x16_t y = vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi));
      int8_t* dst = out + p * out_stride + c0;
      if (cn == 16) {
        vst1q_s8(dst, y);
      } else {
        int8_t tmp[16];
        vst1q_s8(tmp, y);
        memcpy(dst, tmp, cn);
      }
    }
  }
}

}  // namespace cpu
}  // namespace tern
