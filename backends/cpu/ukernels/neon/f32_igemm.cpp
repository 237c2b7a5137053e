// NEON microkernels (aarch64, where Advanced SIMD is always there):
//   f32_igemm_ukernel_6x16__neon  6 rows x 4 q registers, 24 accumulators +
//     4 weight vectors of the 32 q registers; one panel, so isa.cpp takes it
//     for the last odd panel too
//   f32_dwconv_ukernel__neon      4 channels per vector, scalar tail
#include <arm_neon.h>

#include "backends/cpu/ukernels/common/f32_igemm.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMr = 6;

inline float32x4_t clamp(float32x4_t v, float32x4_t lo, float32x4_t hi) { return vminq_f32(vmaxq_f32(v, lo), hi); }

// Loads the first n lanes (4 if n >= 4; the rest 0).
inline float32x4_t load(const float* p, size_t n) {
  if (n >= 4) return vld1q_f32(p);
  float tmp[4] = {0.f, 0.f, 0.f, 0.f};
  for (size_t j = 0; j < n; ++j) tmp[j] = p[j];
  return vld1q_f32(tmp);
}

// Stores the first n (<= 4) lanes of v.
inline void store(float* p, float32x4_t v, size_t n) {
  if (n >= 4) {
    vst1q_f32(p, v);
    return;
  }
  float tmp[4];
  vst1q_f32(tmp, v);
  for (size_t j = 0; j < n; ++j) p[j] = tmp[j];
}

void igemm_6x16(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w, float* c,
                size_t c_stride, const float* res, MinMax mm) {
  float32x4_t acc[kMr][4];
  for (int q = 0; q < 4; ++q) {
    const float32x4_t bias = vld1q_f32(w + 4 * q);
    for (size_t i = 0; i < kMr; ++i) acc[i][q] = bias;
  }
  igemm_k_loop<kMr>(kc, ks, a, w + kPanel, [&](const float* const* ap, size_t k, const float* wk) {
    const float32x4_t v0 = vld1q_f32(wk), v1 = vld1q_f32(wk + 4), v2 = vld1q_f32(wk + 8), v3 = vld1q_f32(wk + 12);
    for (size_t i = 0; i < kMr; ++i) {
      const float32x4_t ai = vdupq_n_f32(ap[i][k]);
      acc[i][0] = vfmaq_f32(acc[i][0], ai, v0);
      acc[i][1] = vfmaq_f32(acc[i][1], ai, v1);
      acc[i][2] = vfmaq_f32(acc[i][2], ai, v2);
      acc[i][3] = vfmaq_f32(acc[i][3], ai, v3);
    }
  });
  const float32x4_t lo = vdupq_n_f32(mm.min), hi = vdupq_n_f32(mm.max);
  // Rows i < kMr with a test, not i < mr: acc is then indexed by constants
  // only and stays in registers (a run-time index spills it to the stack).
#pragma GCC unroll 8
  for (size_t i = 0; i < kMr; ++i) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (size_t q = 0; q < 4; ++q) {
      if (4 * q >= nc) break;
      float32x4_t v = acc[i][q];
      if (res != nullptr) v = vaddq_f32(v, load(res + i * c_stride + 4 * q, nc - 4 * q));
      store(c + i * c_stride + 4 * q, clamp(v, lo, hi), nc - 4 * q);
    }
  }
}

}  // namespace

void f32_igemm_ukernel_6x16__neon(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a,
                                  const float* w, size_t, float* c, size_t c_stride, const float* res,
                                  MinMax clamp) {
  igemm_6x16(mr, nc, kc, ks, a, w, c, c_stride, res, clamp);
}

void f32_dwconv_ukernel__neon(size_t channels, size_t pixels, size_t ks, const float* const* in, const float* w,
                              float* out, size_t out_stride, MinMax mm) {
  const float32x4_t lo = vdupq_n_f32(mm.min), hi = vdupq_n_f32(mm.max);
  for (size_t c0 = 0; c0 < channels; c0 += 4) {
    const size_t n = channels - c0 < 4 ? channels - c0 : 4;
    const float* wb = w + (c0 / kPanel) * kPanel * (1 + ks) + c0 % kPanel;  // this 4-lane quarter of its block
    for (size_t p = 0; p < pixels; ++p) {
      const float* const* taps = in + p * ks;
      if (n == 4) {
        float32x4_t acc = vld1q_f32(wb);
        for (size_t t = 0; t < ks; ++t) acc = vfmaq_f32(acc, vld1q_f32(taps[t] + c0), vld1q_f32(wb + kPanel * (1 + t)));
        vst1q_f32(out + p * out_stride + c0, clamp(acc, lo, hi));
      } else {
        for (size_t j = 0; j < n; ++j) {
          float acc = wb[j];
          for (size_t t = 0; t < ks; ++t) acc += taps[t][c0 + j] * wb[kPanel * (1 + t) + j];
          out[p * out_stride + c0 + j] = acc < mm.min ? mm.min : (acc > mm.max ? mm.max : acc);
        }
      }
    }
  }
}

}  // namespace cpu
}  // namespace tern
