// qs8_quantize_ukernel__avx2, qs8_binary_ukernel__avx2 (8 elements a step,
// the tail through the scalar kernels) and qs8_pool_ukernel__avx2 (16
// channels a step, the last step overlapping the one before; fewer than 8
// channels through the scalar kernel), ukernels/qs8.h.
#include <immintrin.h>

#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// 8 floats -> clamp(round(v) + zero) as 8 int8 in the low 8 bytes. max/min
// return their second operand for a NaN: NaN -> lo, as the scalar kernel.
inline __m128i to_int8x8(__m256 v, __m256 lo, __m256 hi, __m256i zero) {
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  const __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(v), zero);  // round half to even
  const __m128i s16 = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
  return _mm_packs_epi16(s16, s16);
}

inline __m256 load8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Channels j..j+W-1 (W = 8 or 16) of one output pixel of qs8_pool_ukernel__avx2.
template <int W>
inline void pool_channels(size_t j, size_t ks, const int8_t* const* in, const float* count, int8_t* out,
                          const Qs8PoolParams& p) {
  auto load = [&](size_t t) {
    const __m128i* src = reinterpret_cast<const __m128i*>(in[t] + j);
    return W == 16 ? _mm_loadu_si128(src) : _mm_loadl_epi64(src);
  };
  const __m256 xs = _mm256_set1_ps(p.x_scale), xz = _mm256_set1_ps(p.x_zero);
  // f = (float(x) - x_zero) * x_scale of the 8 bytes at x
  auto dequantize = [&](__m128i x) { return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x)), xz), xs); };
  __m256 v[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  if (count == nullptr) {
    __m128i m = load(0);
    for (size_t t = 1; t < ks; ++t) m = _mm_max_epi8(m, load(t));
    v[0] = dequantize(m);
    if (W == 16) v[1] = dequantize(_mm_srli_si128(m, 8));
  } else {
    for (size_t t = 0; t < ks; ++t) {
      const __m128i x = load(t);
      v[0] = _mm256_add_ps(v[0], dequantize(x));
      if (W == 16) v[1] = _mm256_add_ps(v[1], dequantize(_mm_srli_si128(x, 8)));
    }
    const __m256 n = _mm256_set1_ps(*count);
    v[0] = _mm256_div_ps(v[0], n), v[1] = _mm256_div_ps(v[1], n);
  }
  const __m256 ys = _mm256_set1_ps(p.y_inv_scale);
  const __m256 lo = _mm256_set1_ps(p.qmin - p.y_zero), hi = _mm256_set1_ps(p.qmax - p.y_zero);
  const __m256i zero = _mm256_set1_epi32(static_cast<int32_t>(p.y_zero));
  const __m128i r0 = to_int8x8(_mm256_mul_ps(v[0], ys), lo, hi, zero);
  if (W == 16) {
    const __m128i r1 = to_int8x8(_mm256_mul_ps(v[1], ys), lo, hi, zero);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm_unpacklo_epi64(r0, r1));
  } else {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j), r0);
  }
}

}  // namespace

void qs8_pool_ukernel__avx2(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const float* count,
                            int8_t* out, size_t out_stride, const Qs8PoolParams& p) {
  if (channels < 8) return qs8_pool_ukernel__scalar(channels, pixels, ks, in, count, out, out_stride, p);
  for (size_t px = 0; px < pixels; ++px, in += ks, out += out_stride) {
    const float* s = count != nullptr ? count + px : nullptr;
    if (channels < 16) {  // two overlapping steps of 8
      pool_channels<8>(0, ks, in, s, out, p);
      pool_channels<8>(channels - 8, ks, in, s, out, p);
      continue;
    }
    size_t j = 0;
    for (; j + 16 <= channels; j += 16) pool_channels<16>(j, ks, in, s, out, p);
    if (j < channels) pool_channels<16>(channels - 16, ks, in, s, out, p);  // rewrites some with the same bytes
  }
}

void f32_minmax_ukernel__avx2(size_t n, const float* x, float* lo, float* hi) {
  // min(v, acc) returns acc where v is NaN: NaNs are skipped, as in the scalar kernel
  __m256 l = _mm256_set1_ps(x[0]), h = l;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    l = _mm256_min_ps(v, l);
    h = _mm256_max_ps(v, h);
  }
  alignas(32) float ls[8], hs[8];
  _mm256_store_ps(ls, l);
  _mm256_store_ps(hs, h);
  float a = ls[0], b = hs[0];
  for (int j = 1; j < 8; ++j) a = ls[j] < a ? ls[j] : a, b = hs[j] > b ? hs[j] : b;
  for (; i < n; ++i) a = x[i] < a ? x[i] : a, b = x[i] > b ? x[i] : b;
  *lo = a, *hi = b;
}

void qs8_quantize_ukernel__avx2(size_t n, const float* x, int8_t* y, const Qs8QuantizeParams& p) {
  const __m256 s = _mm256_set1_ps(p.inv_scale);
  const __m256 lo = _mm256_set1_ps(p.qmin - p.zero_point), hi = _mm256_set1_ps(p.qmax - p.zero_point);
  const __m256i zero = _mm256_set1_epi32(static_cast<int32_t>(p.zero_point));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), to_int8x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), lo, hi, zero));
  }
  qs8_quantize_ukernel__scalar(n - i, x + i, y + i, p);
}

void qs8_binary_ukernel__avx2(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p) {
  const __m256 as = _mm256_set1_ps(p.a_scale), az = _mm256_set1_ps(p.a_zero);
  const __m256 bs = _mm256_set1_ps(p.b_scale), bz = _mm256_set1_ps(p.b_zero);
  const __m256 ys = _mm256_set1_ps(p.y_inv_scale);
  const __m256 lo = _mm256_set1_ps(p.qmin - p.y_zero), hi = _mm256_set1_ps(p.qmax - p.y_zero);
  const __m256i zero = _mm256_set1_epi32(static_cast<int32_t>(p.y_zero));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 fa = _mm256_mul_ps(_mm256_sub_ps(load8(a + i), az), as);
    const __m256 fb = _mm256_mul_ps(_mm256_sub_ps(load8(b + i), bz), bs);
    const __m256 v = _mm256_mul_ps(p.mul ? _mm256_mul_ps(fa, fb) : _mm256_add_ps(fa, fb), ys);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), to_int8x8(v, lo, hi, zero));
  }
  qs8_binary_ukernel__scalar(n - i, a + i, b + i, y + i, p);
}

}  // namespace cpu
}  // namespace tern
