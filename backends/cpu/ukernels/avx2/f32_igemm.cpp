// AVX2 + FMA microkernels (compiled with -mavx2 -mfma; isa.cpp calls them
// only on CPUs that have both):
//   f32_igemm_ukernel_6x16__avx2  6 rows x 2 ymm, 12 accumulators + 2 weight
//     vectors + 1 broadcast = 15 of the 16 ymm registers; one panel, so
//     isa.cpp takes it for the last odd panel too
//   f32_dwconv_ukernel__avx2      8 channels per vector, tails masked
#include <immintrin.h>

#include "backends/cpu/ukernels/common/avx2.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kMr = 6;

// lo and hi first: maxps and minps return their second operand when either
// is NaN, so a NaN passes as PyTorch's clamp lets it.
inline __m256 clamp(__m256 v, __m256 lo, __m256 hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); }

// One k step of one row: c0 (columns 0-7) and c1 (8-15) += a[k] * w[k].
inline void row_step(const float* ak, __m256 v0, __m256 v1, __m256& c0, __m256& c1) {
  const __m256 ai = _mm256_broadcast_ss(ak);
  c0 = _mm256_fmadd_ps(ai, v0, c0);
  c1 = _mm256_fmadd_ps(ai, v1, c1);
}

void igemm_6x16(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
                float* c, size_t c_stride, const float* res, MinMax mm) {
  // Named accumulators and its own k loop, one k a step, not an array and
  // common/f32_igemm.h's unrolled loop: 12 accumulators + 2 weight vectors
  // + 1 broadcast are 15 of the 16 ymm registers, and GCC kept an array in
  // memory (a store per FMA) and, given 4 steps to interleave, hoisted loads
  // into more registers and spilled. Same operations in the same order as
  // the loop it replaces: the same bits.
  __m256 c00 = _mm256_loadu_ps(w), c01 = _mm256_loadu_ps(w + 8);
  __m256 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00,
         c51 = c01;
  const float* wk = w + kPanel;
  for (size_t t = 0; t < ks; ++t, a += kMr) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    for (size_t k = 0; k < kc; ++k, wk += kPanel) {
      const __m256 v0 = _mm256_loadu_ps(wk), v1 = _mm256_loadu_ps(wk + 8);
      row_step(a0 + k, v0, v1, c00, c01);
      row_step(a1 + k, v0, v1, c10, c11);
      row_step(a2 + k, v0, v1, c20, c21);
      row_step(a3 + k, v0, v1, c30, c31);
      row_step(a4 + k, v0, v1, c40, c41);
      row_step(a5 + k, v0, v1, c50, c51);
    }
  }
  const __m256 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  const __m256 lo = _mm256_set1_ps(mm.min), hi = _mm256_set1_ps(mm.max);
  // Rows i < kMr with a test, not i < mr: acc is then indexed by constants
  // only and stays in registers (a run-time index spills it to the stack).
#pragma GCC unroll 6
  for (size_t i = 0; i < kMr; ++i) {
    if (i >= mr) break;
    __m256 r0 = acc[i][0], r1 = acc[i][1];
    if (res != nullptr) {
      r0 = _mm256_add_ps(r0, load_lanes(res + i * c_stride, nc));
      if (nc > 8) r1 = _mm256_add_ps(r1, load_lanes(res + i * c_stride + 8, nc - 8));
    }
    store_lanes(c + i * c_stride, clamp(r0, lo, hi), nc);
    store_lanes(c + i * c_stride + 8, clamp(r1, lo, hi), nc > 8 ? nc - 8 : 0);
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
