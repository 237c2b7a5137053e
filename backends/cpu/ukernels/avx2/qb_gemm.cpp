// The block-quantized kernels on AVX2 (ukernels/qb.h): a block's 32
// products by maddubs (unsigned x signed bytes, pairs to int16: at most
// 2 * 128 * 127, no saturation) and madd (to int32); 8 blocks' sums
// transposed into one vector by hadds, whose lanes are the spec's 8 lanes.
// Q4: the nibbles (0..15) are the unsigned operand, Q4_0's -8 taken off the
// sum as 8 * s; Q8_0: |w| times a with w's sign (sign_epi8).
#include <immintrin.h>

#include "backends/cpu/ukernels/common/qb_x86.h"

namespace tern {
namespace cpu {
namespace {

// A Q4 block's 32 nibbles in element order: low halves, then high halves.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(r, 4), r), _mm256_set1_epi8(0x0F));
}

// The block's 32 products summed into 8 int32 lanes.
template <int F>
inline __m256i block_dot(__m256i w, __m256i a) {
  const __m256i ones = _mm256_set1_epi16(1);
  if (F == kQbQ8_0) return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w)), ones);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), ones);
}

// Lane t = the sum of v[t]'s 8 lanes (exact: integers).
inline __m256i sum8(const __m256i* v) {
  const __m256i h0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i h4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// The same for v[0], v[1] only (a row's last one or two blocks), lanes 2 .. 7 zero.
inline __m256i sum2(const __m256i* v) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_setzero_si256());
  return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

// Blocks b0 .. b0 + n (n <= 8) of one weight row (blk: block b0) against mr
// activation rows: the weights unpacked once, acc[i] += row i's terms.
template <int F, size_t N>
inline void group(size_t n, const uint8_t* blk, size_t b0, size_t mr, size_t k, const uint8_t* a, size_t a_stride,
                  __m256* acc) {
  constexpr size_t bs = kQbBlockBytes[F];
  if (N != 0) n = N;
  __m256i wv[8];
  for (size_t t = 0; t < 8; ++t) {
    if (t >= n) {
      wv[t] = _mm256_setzero_si256();
    } else if (F == kQbQ8_0) {
      wv[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + t * bs + 2));
    } else {
      wv[t] = nibbles(blk + t * bs + (F == kQbQ4_1 ? 4 : 2));
    }
  }
  const __m256i heads = qb_gather_heads(blk, bs, n);
  const __m256 dw = qb_half8(heads);
  const __m256 mw = F == kQbQ4_1 ? qb_half8(_mm256_srli_epi32(heads, 16)) : _mm256_setzero_ps();
  for (size_t i = 0; i < mr; ++i) {
    const uint8_t* ar = a + i * a_stride;
    const int8_t* q = reinterpret_cast<const int8_t*>(ar) + b0 * kQbBlock;
    __m256i p[8];
    for (size_t t = 0; t < 8; ++t) {
      p[t] = t < n ? block_dot<F>(wv[t], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + t * kQbBlock)))
                   : _mm256_setzero_si256();
    }
    acc[i] = _mm256_add_ps(acc[i], qb_terms8<F>(N == 1 || N == 2 ? sum2(p) : sum8(p), dw, mw, ar, k, b0, n));
  }
}

template <int F>
void gemm(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride, const uint8_t* w, size_t w_stride,
          float* c, size_t c_stride) {
  const size_t nb = k / kQbBlock, full = nb / 8 * 8;
  for (size_t j = 0; j < nc; ++j, w += w_stride) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    size_t b = 0;
    for (; b < full; b += 8) group<F, 8>(8, w + b * kQbBlockBytes[F], b, mr, k, a, a_stride, acc);
    if (nb - b == 1) {  // n known: the tail's sums by sum2
      group<F, 1>(1, w + b * kQbBlockBytes[F], b, mr, k, a, a_stride, acc);
    } else if (nb - b == 2) {
      group<F, 2>(2, w + b * kQbBlockBytes[F], b, mr, k, a, a_stride, acc);
    } else if (b < nb) {
      group<F, 0>(nb - b, w + b * kQbBlockBytes[F], b, mr, k, a, a_stride, acc);
    }
    for (size_t i = 0; i < mr; ++i) c[i * c_stride + j] = qb_combine8(acc[i]);
  }
}

// ---- tiles of 16 activation rows (qb.h): 8 rows a vector, two halves

// Block b's terms for the tile's 16 rows (two halves of 8) and one weight
// row: for each 4-byte chunk, the weight's 4 bytes broadcast times each
// row's (maddubs, pairs to int16: at most 2 * 128 * 127; madd to int32).
// Q4: the nibbles unsigned, Q4_0's -8 taken off as 8 * s; Q8_0: |w| times
// a with w's sign.
template <int F>
inline void tile_terms(const uint8_t* blk, const uint8_t* tb, __m256* t) {
  alignas(32) int32_t wq[8], ws[8];
  const __m256i wv = F == kQbQ8_0 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2))
                                  : nibbles(blk + (F == kQbQ4_1 ? 4 : 2));
  _mm256_store_si256(reinterpret_cast<__m256i*>(wq), F == kQbQ8_0 ? _mm256_abs_epi8(wv) : wv);
  if (F == kQbQ8_0) _mm256_store_si256(reinterpret_cast<__m256i*>(ws), wv);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int c = 0; c < 8; ++c) {
    const __m256i w4 = _mm256_set1_epi32(wq[c]);
    for (int h = 0; h < 2; ++h) {
      __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(tb + 64 * c + 32 * h));
      if (F == kQbQ8_0) a = _mm256_sign_epi8(a, _mm256_set1_epi32(ws[c]));
      isum[h] = _mm256_add_epi32(isum[h], _mm256_madd_epi16(_mm256_maddubs_epi16(w4, a), ones));
    }
  }
  const float* tail = reinterpret_cast<const float*>(tb + 32 * kQbTileRows);
  const __m256 dw = _mm256_set1_ps(qb_half(blk));
  for (int h = 0; h < 2; ++h) {
    __m256i is = isum[h];
    if (F == kQbQ4_0) {
      const __m256i sa = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail + 16 + 8 * h));
      is = _mm256_sub_epi32(is, _mm256_slli_epi32(sa, 3));
    }
    t[h] = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_load_ps(tail + 8 * h)), _mm256_cvtepi32_ps(is));
    if (F == kQbQ4_1) {
      t[h] = _mm256_add_ps(t[h], _mm256_mul_ps(_mm256_set1_ps(qb_half(blk + 2)), _mm256_load_ps(tail + 32 + 8 * h)));
    }
  }
}

template <int F>
void gemm_tile(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w, size_t w_stride, float* c,
               size_t c_stride) {
  constexpr size_t bs = kQbBlockBytes[F];
  const size_t nb = k / kQbBlock;
  for (size_t j = 0; j < nc; ++j, w += w_stride) {
    __m256 acc[8][2];
    for (auto& lane : acc) lane[0] = lane[1] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      __m256 t[2];
      tile_terms<F>(w + b * bs, tile + b * kQbTileBlockBytes, t);
      acc[b % 8][0] = _mm256_add_ps(acc[b % 8][0], t[0]);
      acc[b % 8][1] = _mm256_add_ps(acc[b % 8][1], t[1]);
    }
    alignas(32) float out[16];
    for (int h = 0; h < 2; ++h) {  // the definition's tree, lane by lane
      const __m256 lo = _mm256_add_ps(_mm256_add_ps(acc[0][h], acc[4][h]), _mm256_add_ps(acc[2][h], acc[6][h]));
      const __m256 hi = _mm256_add_ps(_mm256_add_ps(acc[1][h], acc[5][h]), _mm256_add_ps(acc[3][h], acc[7][h]));
      _mm256_store_ps(out + 8 * h, _mm256_add_ps(lo, hi));
    }
    for (size_t i = 0; i < mr; ++i) c[i * c_stride + j] = out[i];
  }
}

}  // namespace

void qb_pack_tile_ukernel__avx2(size_t rows, size_t k, const uint8_t* a, size_t a_stride, uint8_t* tile) {
  qb_pack_tile(rows, k, a, a_stride, tile);
}

void qb_q4_0_gemm_tile_ukernel_16x1__avx2(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                          size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ4_0>(mr, nc, k, tile, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_tile_ukernel_16x1__avx2(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                          size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ4_1>(mr, nc, k, tile, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_tile_ukernel_16x1__avx2(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                          size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ8_0>(mr, nc, k, tile, w, w_stride, c, c_stride);
}

void qb_quantize_ukernel__avx2(size_t k, const float* x, uint8_t* row) { qb_quantize_avx2(k, x, row); }

void qb_q4_0_gemm_ukernel_4x1__avx2(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                    const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_ukernel_4x1__avx2(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                    const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_1>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_ukernel_4x1__avx2(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                    const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ8_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}

}  // namespace cpu
}  // namespace tern
