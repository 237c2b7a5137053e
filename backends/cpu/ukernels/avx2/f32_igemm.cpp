// AVX2 + FMA microkernels (compiled with -mavx2 -mfma; isa.cpp calls them
// only on CPUs that have both):
//   f32_igemm_ukernel_6x16__avx2  6 rows x 2 ymm, 12 accumulators + 2 weight
//     vectors + 1 broadcast = 15 of the 16 ymm registers; one panel, so
//     isa.cpp takes it for the last odd panel too
//   f32_dwconv_ukernel__avx2      8 channels per vector, tails masked
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx2.h"
#include "backends/cpu/ukernels/common/f32_igemm.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMr = 6;

// lo and hi first: maxps and minps return their second operand when either
// is NaN, so a NaN passes as PyTorch's clamp lets it.
inline __m256 clamp(__m256 v, __m256 lo, __m256 hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); }

void igemm_6x16(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
                float* c, size_t c_stride, const float* res, MinMax mm) {
  __m256 acc[kMr][2];
  for (size_t i = 0; i < kMr; ++i) {
    acc[i][0] = _mm256_loadu_ps(w);
    acc[i][1] = _mm256_loadu_ps(w + 8);
  }
  igemm_k_loop<kMr>(kc, ks, a, w + kPanel, [&](const float* const* ap, size_t k, const float* wk) {
    const __m256 v0 = _mm256_loadu_ps(wk), v1 = _mm256_loadu_ps(wk + 8);
    for (size_t i = 0; i < kMr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(ap[i] + k);
      acc[i][0] = _mm256_fmadd_ps(ai, v0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, v1, acc[i][1]);
    }
  });
  const __m256 lo = _mm256_set1_ps(mm.min), hi = _mm256_set1_ps(mm.max);
  // Rows i < kMr with a test, not i < mr: acc is then indexed by constants
  // only and stays in registers (a run-time index spills it to the stack).
#pragma GCC unroll 6
  for (size_t i = 0; i < kMr; ++i) {
    if (i >= mr) break;
    if (res != nullptr) {
      acc[i][0] = _mm256_add_ps(acc[i][0], load_lanes(res + i * c_stride, nc));
      if (nc > 8) acc[i][1] = _mm256_add_ps(acc[i][1], load_lanes(res + i * c_stride + 8, nc - 8));
    }
    store_lanes(c + i * c_stride, clamp(acc[i][0], lo, hi), nc);
    store_lanes(c + i * c_stride + 8, clamp(acc[i][1], lo, hi), nc > 8 ? nc - 8 : 0);
  }
}

}  // namespace

void f32_igemm_ukernel_6x16__avx2(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a,
                                  const float* w, size_t, float* c, size_t c_stride, const float* res,
                                  MinMax clamp) {
  igemm_6x16(mr, nc, kc, ks, a, w, c, c_stride, res, clamp);
}

void f32_dwconv_ukernel__avx2(size_t channels, size_t pixels, size_t ks, const float* const* in,
                              const float* w, float* out, size_t out_stride, MinMax mm) {
  const __m256 lo = _mm256_set1_ps(mm.min), hi = _mm256_set1_ps(mm.max);
  for (size_t c0 = 0; c0 < channels; c0 += 8) {
    const size_t n = channels - c0 < 8 ? channels - c0 : 8;
    const __m256i m = lane_mask(n);
    const float* wb = w + (c0 / kPanel) * kPanel * (1 + ks) + c0 % kPanel;  // this 8-lane half of its block
    const __m256 bias = _mm256_loadu_ps(wb);
    for (size_t p = 0; p < pixels; ++p) {
      __m256 acc = bias;
      const float* const* taps = in + p * ks;
      for (size_t t = 0; t < ks; ++t) {
        const __m256 x = n == 8 ? _mm256_loadu_ps(taps[t] + c0) : _mm256_maskload_ps(taps[t] + c0, m);
        acc = _mm256_fmadd_ps(x, _mm256_loadu_ps(wb + kPanel * (1 + t)), acc);
      }
      store_lanes(out + p * out_stride + c0, clamp(acc, lo, hi), n);
    }
  }
}

}  // namespace cpu
}  // namespace tern
