// The block-quantized kernels on Armv8.2 NEON with the dot product
// (ukernels/qb.h): a block's 32 products by two SDOTs (signed x signed
// bytes, 4 a lane into int32: exact; Q4 nibbles fit int8 as they are, Q4_0's
// minus 8 taken before), 8 blocks' sums transposed by pairwise adds into
// the spec's 8 lanes (two float32x4), the float step lane by lane.
#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/ukernels/qb.h"

namespace tern {
namespace cpu {
namespace {

// Row i's result from the 8 lanes of a tile's accumulators (qb_combine's tree).
inline float qb_combine8_of(const float (*acc)[16], size_t i) {
  const float lanes[8] = {acc[0][i], acc[1][i], acc[2][i], acc[3][i], acc[4][i], acc[5][i], acc[6][i], acc[7][i]};
  return qb_combine(lanes);
}

// A block's 32 weights as two int8x16 in element order.
template <int F>
inline void block_weights(const uint8_t* blk, int8x16_t* lo, int8x16_t* hi) {
  if (F == kQbQ8_0) {
    *lo = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    *hi = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
    return;
  }
  const uint8x16_t r = vld1q_u8(blk + (F == kQbQ4_1 ? 4 : 2));
  int8x16_t l = vreinterpretq_s8_u8(vandq_u8(r, vdupq_n_u8(0x0F)));
  int8x16_t h = vreinterpretq_s8_u8(vshrq_n_u8(r, 4));
  if (F == kQbQ4_0) {
    l = vsubq_s8(l, vdupq_n_s8(8));
    h = vsubq_s8(h, vdupq_n_s8(8));
  }
  *lo = l;
  *hi = h;
}

// The float step of blocks b0 .. b0 + n (n <= 8), lanes 0-3 and 4-7.
template <int F>
inline void terms(const int32_t* isum, const float* dw, const float* mw, const uint8_t* a, size_t k, size_t b0,
                  size_t n, float32x4_t* acc) {
  const size_t nb = k / kQbBlock;
  float da[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t sa[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  memcpy(da, a + k + 4 * b0, 4 * n);
  memcpy(sa, a + k + 4 * nb + 4 * b0, 4 * n);
  for (int h = 0; h < 2; ++h) {
    const float32x4_t d = vld1q_f32(da + 4 * h);
    float32x4_t t = vmulq_f32(vmulq_f32(vld1q_f32(dw + 4 * h), d), vcvtq_f32_s32(vld1q_s32(isum + 4 * h)));
    if (F == kQbQ4_1) {
      t = vaddq_f32(t, vmulq_f32(vld1q_f32(mw + 4 * h), vmulq_f32(d, vcvtq_f32_s32(vld1q_s32(sa + 4 * h)))));
    }
    acc[h] = vaddq_f32(acc[h], t);
  }
}

template <int F>
inline void group(size_t n, const uint8_t* blk, size_t b0, size_t mr, size_t k, const uint8_t* a, size_t a_stride,
                  float32x4_t (*acc)[2]) {
  constexpr size_t bs = kQbBlockBytes[F];
  int8x16_t wl[8], wh[8];
  float dw[8] = {0, 0, 0, 0, 0, 0, 0, 0}, mw[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t t = 0; t < n; ++t) {
    block_weights<F>(blk + t * bs, &wl[t], &wh[t]);
    dw[t] = qb_half(blk + t * bs);
    if (F == kQbQ4_1) mw[t] = qb_half(blk + t * bs + 2);
  }
  for (size_t i = 0; i < mr; ++i) {
    const uint8_t* ar = a + i * a_stride;
    const int8_t* q = reinterpret_cast<const int8_t*>(ar) + b0 * kQbBlock;
    int32x4_t p[8];
    for (size_t t = 0; t < 8; ++t) {
      p[t] = vdupq_n_s32(0);
      if (t < n) {
        p[t] = vdotq_s32(p[t], wl[t], vld1q_s8(q + t * kQbBlock));
        p[t] = vdotq_s32(p[t], wh[t], vld1q_s8(q + t * kQbBlock + 16));
      }
    }
    int32_t isum[8];
    vst1q_s32(isum, vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3])));
    vst1q_s32(isum + 4, vpaddq_s32(vpaddq_s32(p[4], p[5]), vpaddq_s32(p[6], p[7])));
    terms<F>(isum, dw, mw, ar, k, b0, n, acc[i]);
  }
}

template <int F>
void gemm(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride, const uint8_t* w, size_t w_stride,
          float* c, size_t c_stride) {
  const size_t nb = k / kQbBlock;
  for (size_t j = 0; j < nc; ++j, w += w_stride) {
    float32x4_t acc[4][2];
    for (auto& r : acc) r[0] = r[1] = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; b += 8) {
      group<F>(nb - b < 8 ? nb - b : 8, w + b * kQbBlockBytes[F], b, mr, k, a, a_stride, acc);
    }
    for (size_t i = 0; i < mr; ++i) {
      const float32x4_t s = vaddq_f32(acc[i][0], acc[i][1]);               // 0+4, 1+5, 2+6, 3+7
      const float32x2_t h = vadd_f32(vget_low_f32(s), vget_high_f32(s));  // (0+4)+(2+6), (1+5)+(3+7)
      c[i * c_stride + j] = vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
    }
  }
}

// ---- tiles of 16 activation rows (qb.h): 4 rows a vector, a lane each

// isum[v] += rows 4v .. 4v + 3's chunk (4 bytes each, at a) times the
// weight's 4 bytes in lane L of w.
template <int L>
inline void tile_dot(int32x4_t* isum, const int8_t* a, int8x16_t w) {
  for (int v = 0; v < 4; ++v) isum[v] = vdotq_laneq_s32(isum[v], vld1q_s8(a + 16 * v), w, L);
}

template <int F>
void gemm_tile(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w, size_t w_stride, float* c,
               size_t c_stride) {
  constexpr size_t bs = kQbBlockBytes[F];
  const size_t nb = k / kQbBlock;
  for (size_t j = 0; j < nc; ++j, w += w_stride) {
    float acc[8][16] = {};  // the definition's 8 lanes, each for the 16 rows
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* blk = w + b * bs;
      const int8_t* tb = reinterpret_cast<const int8_t*>(tile + b * kQbTileBlockBytes);
      int8x16_t wl, wh;
      block_weights<F>(blk, &wl, &wh);
      int32x4_t isum[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
      tile_dot<0>(isum, tb, wl), tile_dot<1>(isum, tb + 64, wl), tile_dot<2>(isum, tb + 128, wl);
      tile_dot<3>(isum, tb + 192, wl), tile_dot<0>(isum, tb + 256, wh), tile_dot<1>(isum, tb + 320, wh);
      tile_dot<2>(isum, tb + 384, wh), tile_dot<3>(isum, tb + 448, wh);
      const float* tail = reinterpret_cast<const float*>(tb + 32 * kQbTileRows);
      const float32x4_t dw = vdupq_n_f32(qb_half(blk));
      float* lane = acc[b % 8];
      for (int v = 0; v < 4; ++v) {
        float32x4_t t = vmulq_f32(vmulq_f32(dw, vld1q_f32(tail + 4 * v)), vcvtq_f32_s32(isum[v]));
        if (F == kQbQ4_1) t = vaddq_f32(t, vmulq_f32(vdupq_n_f32(qb_half(blk + 2)), vld1q_f32(tail + 32 + 4 * v)));
        vst1q_f32(lane + 4 * v, vaddq_f32(vld1q_f32(lane + 4 * v), t));
      }
    }
    for (size_t i = 0; i < mr; ++i) c[i * c_stride + j] = qb_combine8_of(acc, i);
  }
}

}  // namespace

void qb_pack_tile_ukernel__neondot(size_t rows, size_t k, const uint8_t* a, size_t a_stride, uint8_t* tile) {
  qb_pack_tile(rows, k, a, a_stride, tile);
}

void qb_q4_0_gemm_tile_ukernel_16x1__neondot(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                             size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ4_0>(mr, nc, k, tile, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_tile_ukernel_16x1__neondot(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                             size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ4_1>(mr, nc, k, tile, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_tile_ukernel_16x1__neondot(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                             size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ8_0>(mr, nc, k, tile, w, w_stride, c, c_stride);
}

void qb_quantize_ukernel__neondot(size_t k, const float* x, uint8_t* row) {
  const size_t nb = k / kQbBlock;
  int8_t* q = reinterpret_cast<int8_t*>(row);
  float* d = reinterpret_cast<float*>(row + k);
  int32_t* s = reinterpret_cast<int32_t*>(row + k + 4 * nb);
  for (size_t b = 0; b < nb; ++b, x += kQbBlock) {
    float32x4_t v[8], m = vdupq_n_f32(0.0f);
    for (int t = 0; t < 8; ++t) {
      v[t] = vld1q_f32(x + 4 * t);
      m = vmaxnmq_f32(m, vabsq_f32(v[t]));  // maxnm: a NaN is skipped
    }
    const float db = vmaxnmvq_f32(m) / 127.0f;
    const float32x4_t id = vdupq_n_f32(db != 0.0f ? 1.0f / db : 0.0f);
    int32x4_t sum = vdupq_n_s32(0);
    int16x4_t h[8];
    for (int t = 0; t < 8; ++t) {
      float32x4_t y = vmaxnmq_f32(vmulq_f32(v[t], id), vdupq_n_f32(-127.0f));  // a NaN yields -127
      y = vminnmq_f32(y, vdupq_n_f32(127.0f));
      const int32x4_t qi = vcvtnq_s32_f32(y);  // round half to even
      sum = vaddq_s32(sum, qi);
      h[t] = vmovn_s32(qi);
    }
    for (int t = 0; t < 4; ++t) {
      vst1_s8(q + b * kQbBlock + 8 * t, vmovn_s16(vcombine_s16(h[2 * t], h[2 * t + 1])));
    }
    d[b] = db;
    s[b] = vaddvq_s32(sum);
  }
  const size_t used = k + 8 * nb;
  memset(row + used, 0, qb_row_bytes(k) - used);
}

void qb_q4_0_gemm_ukernel_4x1__neondot(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                       const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_ukernel_4x1__neondot(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                       const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_1>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_ukernel_4x1__neondot(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                       const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ8_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}

}  // namespace cpu
}  // namespace tern
