// f32_igemm_ukernel_4x16__scalar (isa.cpp takes it for the last odd panel
// too) and f32_dwconv_ukernel__scalar: the reference versions, plain C++
// that any compiler vectorizes a little. Always built; the other ISAs are
// tested against them.
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMr = 4;

float clamp(float v, MinMax m) { return v < m.min ? m.min : (v > m.max ? m.max : v); }

void igemm_4x16(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
                float* c, size_t c_stride, const float* res, MinMax mm) {
  float acc[kMr][kPanel];
  for (size_t i = 0; i < kMr; ++i) {
    for (int j = 0; j < kPanel; ++j) acc[i][j] = w[j];
  }
  w += kPanel;
  for (size_t t = 0; t < ks; ++t) {
    const float* const* at = a + t * kMr;
    for (size_t k = 0; k < kc; ++k) {
      for (size_t i = 0; i < kMr; ++i) {
        const float ai = at[i][k];
        for (int j = 0; j < kPanel; ++j) acc[i][j] += ai * w[j];
      }
      w += kPanel;
    }
  }
  for (size_t i = 0; i < mr; ++i) {
    for (size_t j = 0; j < nc; ++j) c[i * c_stride + j] = clamp(acc[i][j] + (res ? res[i * c_stride + j] : 0.f), mm);
  }
}

}  // namespace

void f32_igemm_ukernel_4x16__scalar(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a,
                                    const float* w, size_t, float* c, size_t c_stride, const float* res,
                                    MinMax clamp) {
  igemm_4x16(mr, nc, kc, ks, a, w, c, c_stride, res, clamp);
}

void f32_dwconv_ukernel__scalar(size_t channels, size_t pixels, size_t ks, const float* const* in,
                                const float* w, float* out, size_t out_stride, MinMax mm) {
  for (size_t c0 = 0; c0 < channels; c0 += kPanel) {
    const size_t cn = channels - c0 < size_t(kPanel) ? channels - c0 : size_t(kPanel);
    for (size_t p = 0; p < pixels; ++p) {
      float acc[kPanel];
      for (size_t j = 0; j < cn; ++j) acc[j] = w[j];
      for (size_t t = 0; t < ks; ++t) {
        const float* x = in[p * ks + t] + c0;
        const float* wt = w + kPanel * (1 + t);
        for (size_t j = 0; j < cn; ++j) acc[j] += x[j] * wt[j];
      }
      for (size_t j = 0; j < cn; ++j) out[p * out_stride + c0 + j] = clamp(acc[j], mm);
    }
    w += kPanel * (1 + ks);
  }
}

}  // namespace cpu
}  // namespace tern
