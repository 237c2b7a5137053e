// f32_minmax_ukernel__neondot, qs8_quantize_ukernel__neondot, qs8_binary_ukernel__neondot
// and qs8_pool_ukernel__neondot (ukernels/qs8.h): 16 elements (channels) a step,
// as four float32x4; the scalar kernels' float32 operations in their order, so
// the bytes are theirs (no fused multiply-adds: CMakeLists.txt builds the qs8
// files with -ffp-contract=off). quantize and binary hand the last n % 16 to the scalar
// kernels; pool reads and writes a short last block of channels through a copy.
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// The scalar kernels' to_int8 on 16 values: clamp to [lo, hi] (maxnm / minnm
// return the number for a NaN: NaN -> lo), round half to even by adding and
// subtracting 1.5 * 2^23, add zero, truncate to int32 and keep the low byte.
inline int8x16_t to_int8x16(const float32x4_t v[4], float32x4_t lo, float32x4_t hi, float32x4_t zero) {
  const float32x4_t magic = vdupq_n_f32(12582912.0f);
  int16x4_t h[4];
  for (int q = 0; q < 4; ++q) {
    const float32x4_t c = vminnmq_f32(vmaxnmq_f32(v[q], lo), hi);
    h[q] = vmovn_s32(vcvtq_s32_f32(vaddq_f32(vsubq_f32(vaddq_f32(c, magic), magic), zero)));
  }
  return vcombine_s8(vmovn_s16(vcombine_s16(h[0], h[1])), vmovn_s16(vcombine_s16(h[2], h[3])));
}

// 16 int8 as four float32x4.
inline void to_f32x16(int8x16_t x, float32x4_t f[4]) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(x)), hi = vmovl_high_s8(x);
  f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  f[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
  f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  f[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

// The least (kGreater: greatest) of m lanes, as the scalar loop finds it over
// the x[0..) the lanes covered. A tie between +0 and -0 (they compare equal)
// is the one case where lanes lose the scalar order, which keeps the first in
// x: then the answer is x's first zero.
template <bool kGreater>
float reduce(const float* s, int m, const float* x) {
  float r = s[0];
  for (int j = 1; j < m; ++j) r = (kGreater ? s[j] > r : s[j] < r) ? s[j] : r;
  bool mixed = false;
  for (int j = 0; j < m; ++j) mixed |= s[j] == r && std::signbit(s[j]) != std::signbit(r);
  if (!mixed) return r;
  size_t k = 0;
  while (x[k] != 0.0f) ++k;
  return x[k];
}

template <bool kMul>
void binary(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p) {
  const float32x4_t as = vdupq_n_f32(p.a_scale), az = vdupq_n_f32(p.a_zero);
  const float32x4_t bs = vdupq_n_f32(p.b_scale), bz = vdupq_n_f32(p.b_zero);
  const float32x4_t ys = vdupq_n_f32(p.y_inv_scale), zero = vdupq_n_f32(p.y_zero);
  const float32x4_t lo = vdupq_n_f32(p.qmin - p.y_zero), hi = vdupq_n_f32(p.qmax - p.y_zero);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float32x4_t fa[4], fb[4], v[4];
    to_f32x16(vld1q_s8(a + i), fa);
    to_f32x16(vld1q_s8(b + i), fb);
    for (int q = 0; q < 4; ++q) {
      const float32x4_t da = vmulq_f32(vsubq_f32(fa[q], az), as);
      const float32x4_t db = vmulq_f32(vsubq_f32(fb[q], bz), bs);
      v[q] = vmulq_f32(kMul ? vmulq_f32(da, db) : vaddq_f32(da, db), ys);
    }
    vst1q_s8(y + i, to_int8x16(v, lo, hi, zero));
  }
  qs8_binary_ukernel__scalar(n - i, a + i, b + i, y + i, p);
}

}  // namespace

void f32_minmax_ukernel__neondot(size_t n, const float* x, float* lo, float* hi) {
  // v < l ? v : l, as the scalar kernel: a NaN in x is skipped, a NaN x[0] stays
  const float32x4_t x0 = vdupq_n_f32(x[0]);
  float32x4_t l[4] = {x0, x0, x0, x0}, h[4] = {x0, x0, x0, x0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int q = 0; q < 4; ++q) {
      const float32x4_t v = vld1q_f32(x + i + 4 * q);
      l[q] = vbslq_f32(vcltq_f32(v, l[q]), v, l[q]);
      h[q] = vbslq_f32(vcgtq_f32(v, h[q]), v, h[q]);
    }
  }
  float ls[16], hs[16];
  for (int q = 0; q < 4; ++q) vst1q_f32(ls + 4 * q, l[q]), vst1q_f32(hs + 4 * q, h[q]);
  float a = reduce<false>(ls, 16, x), b = reduce<true>(hs, 16, x);
  for (; i < n; ++i) a = x[i] < a ? x[i] : a, b = x[i] > b ? x[i] : b;
  *lo = a, *hi = b;
}

void qs8_quantize_ukernel__neondot(size_t n, const float* x, int8_t* y, const Qs8QuantizeParams& p) {
  const float32x4_t s = vdupq_n_f32(p.inv_scale), zero = vdupq_n_f32(p.zero_point);
  const float32x4_t lo = vdupq_n_f32(p.qmin - p.zero_point), hi = vdupq_n_f32(p.qmax - p.zero_point);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float32x4_t v[4];
    for (int q = 0; q < 4; ++q) v[q] = vmulq_f32(vld1q_f32(x + i + 4 * q), s);
    vst1q_s8(y + i, to_int8x16(v, lo, hi, zero));
  }
  qs8_quantize_ukernel__scalar(n - i, x + i, y + i, p);
}

void qs8_binary_ukernel__neondot(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p) {
  if (p.mul) {
    binary<true>(n, a, b, y, p);
  } else {
    binary<false>(n, a, b, y, p);
  }
}

void qs8_pool_ukernel__neondot(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const float* count,
                               int8_t* out, size_t out_stride, const Qs8PoolParams& p) {
  const float32x4_t xs = vdupq_n_f32(p.x_scale), xz = vdupq_n_f32(p.x_zero), ys = vdupq_n_f32(p.y_inv_scale);
  const float32x4_t zero = vdupq_n_f32(p.y_zero);
  const float32x4_t lo = vdupq_n_f32(p.qmin - p.y_zero), hi = vdupq_n_f32(p.qmax - p.y_zero);
  for (size_t px = 0; px < pixels; ++px, in += ks, out += out_stride) {
    for (size_t c0 = 0; c0 < channels; c0 += 16) {
      const size_t cn = channels - c0 < 16 ? channels - c0 : 16;
      auto load = [&](size_t t) {
        if (cn == 16) return vld1q_s8(in[t] + c0);
        int8_t tmp[16] = {};  // no read past the row's last channel
        memcpy(tmp, in[t] + c0, cn);
        return vld1q_s8(tmp);
      };
      float32x4_t v[4];
      if (count == nullptr) {
        int8x16_t m = load(0);
        for (size_t t = 1; t < ks; ++t) m = vmaxq_s8(m, load(t));
        to_f32x16(m, v);
        for (int q = 0; q < 4; ++q) v[q] = vmulq_f32(vmulq_f32(vsubq_f32(v[q], xz), xs), ys);
      } else {
        for (int q = 0; q < 4; ++q) v[q] = vdupq_n_f32(0.0f);
        for (size_t t = 0; t < ks; ++t) {
          float32x4_t f[4];
          to_f32x16(load(t), f);
          for (int q = 0; q < 4; ++q) v[q] = vaddq_f32(v[q], vmulq_f32(vsubq_f32(f[q], xz), xs));
        }
        const float32x4_t n = vdupq_n_f32(count[px]);
        for (int q = 0; q < 4; ++q) v[q] = vmulq_f32(vdivq_f32(v[q], n), ys);
      }
      const int8x16_t y = to_int8x16(v, lo, hi, zero);
      if (cn == 16) {
        vst1q_s8(out + c0, y);
      } else {
        int8_t tmp[16];
        vst1q_s8(tmp, y);
        memcpy(out + c0, tmp, cn);
      }
    }
  }
}

}  // namespace cpu
}  // namespace tern
