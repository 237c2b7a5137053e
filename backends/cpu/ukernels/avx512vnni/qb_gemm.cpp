// The block-quantized kernels on AVX-512 VNNI (ukernels/qb.h): two blocks a
// 512-bit vector, their 64 products by vpdpbusd (unsigned x signed bytes,
// 4 a lane into int32: exact). Q4: the nibbles (0..15) are the unsigned
// operand, Q4_0's -8 taken off the sum as 8 * s; Q8_0: |w| (128 for -128,
// right as unsigned) times a negated where w < 0. 8 blocks' sums are
// transposed into one 256-bit vector, the spec's 8 lanes, and the float
// step is qb_x86.h's, as in the avx2 file.
#include <immintrin.h>

#include "backends/cpu/ukernels/common/qb_x86.h"

// GCC 12 reports the undefined upper halves inside its AVX-512 intrinsics
// (inserti64x4, unpack) as maybe-uninitialized at -O3: a false alarm.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

// Blocks t and t + 1 of a group (the second absent when `two` is false:
// zeros), unpacked: Q4 nibbles in element order, Q8_0 int8 as they are.
template <int F>
inline __m512i pair_weights(const uint8_t* blk, bool two) {
  constexpr size_t bs = kQbBlockBytes[F];
  if (F == kQbQ8_0) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    const __m256i hi = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + bs + 2)) : _mm256_setzero_si256();
    return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
  }
  constexpr size_t off = F == kQbQ4_1 ? 4 : 2;
  // 128-bit lanes r0, r0, r1, r1 by broadcasting loads (no shuffle), the
  // second of each pair shifted to its high nibbles
  __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + off)));
  z = two ? _mm512_mask_broadcast_i32x4(z, 0xFF00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + bs + off)))
          : _mm512_maskz_mov_epi32(0x00FF, z);
  return _mm512_and_si512(_mm512_mask_srli_epi16(z, 0xFF00FF00u, z, 4), _mm512_set1_epi8(0x0F));
}

// Lane t of the result = the sum of block t's 8 int32 lanes, blocks 2i and
// 2i + 1 being the low and high halves of z[i].
inline __m256i sum8(const __m512i* z) {
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
  // each 128-bit lane L: the sums over L of z[0], z[1], z[2], z[3]
  const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  // lanes 0 + 1 (the blocks 2i) and 2 + 3 (the blocks 2i + 1)
  const __m512i s2 = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, s2));
}

// Lanes 0 and 1 of the result = the sums of z's low and high 8 int32 lanes
// (the blocks of one pair: a row's last one or two blocks), the others 0.
// A quarter of sum8's work, for the tail of a row (K = 576: 16 + 2 blocks).
inline __m256i sum2(__m512i z) {
  __m512i s = _mm512_add_epi32(z, _mm512_shuffle_epi32(z, _MM_PERM_BADC));  // each 128-bit lane: 0+2, 1+3, ...
  s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_CDAB));          // ... its sum in all 4 lanes
  s = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));  // 128-bit lanes 0 + 1, 2 + 3
  return _mm512_castsi512_si256(_mm512_maskz_permutexvar_epi32(0x3, _mm512_setr_epi32(0, 8, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                                      0, 0, 0, 0, 0, 0), s));
}

// The low halves of 8 lanes as floats: AVX-512F's conversion, exact (a
// NaN's payload aside, which qb_half keeps and this quiets).
inline __m256 half8(__m256i h) {
  return _mm512_castps512_ps256(_mm512_cvtph_ps(_mm256_zextsi128_si256(_mm256_cvtepi32_epi16(h))));
}

// Blocks b0 .. b0 + n (n <= 8; N: n known) of NR weight rows (w: block b0 of
// the first, w_stride apart) against mr activation rows: each weight pair
// unpacked once, each activation pair loaded once, acc[i * NR + r] +=
// the terms of activation row i and weight row r.
template <int F, size_t N, int NR>
inline void group(size_t n, const uint8_t* w, size_t w_stride, size_t b0, size_t mr, size_t k, const uint8_t* a,
                  size_t a_stride, __m256* acc) {
  constexpr size_t bs = kQbBlockBytes[F];
  if (N != 0) n = N;
  __m512i wv[NR][4];
  __m256 dw[NR], mw[NR];
  for (int r = 0; r < NR; ++r) {
    const uint8_t* blk = w + r * w_stride;
    for (size_t t = 0; t < 4; ++t) {
      wv[r][t] = 2 * t < n ? pair_weights<F>(blk + 2 * t * bs, 2 * t + 1 < n) : _mm512_setzero_si512();
    }
    const __m256i heads = qb_gather_heads(blk, bs, n);
    dw[r] = half8(heads);
    mw[r] = F == kQbQ4_1 ? half8(_mm256_srli_epi32(heads, 16)) : _mm256_setzero_ps();
  }
  for (size_t i = 0; i < mr; ++i) {
    const uint8_t* ar = a + i * a_stride;
    const int8_t* q = reinterpret_cast<const int8_t*>(ar) + b0 * kQbBlock;
    __m512i av[4];
    for (size_t t = 0; t < 4; ++t) {
      const __mmask64 m = 2 * t >= n ? 0 : 2 * t + 1 < n ? ~__mmask64(0) : (__mmask64(1) << 32) - 1;
      av[t] = _mm512_maskz_loadu_epi8(m, q + 2 * t * kQbBlock);
    }
    for (int r = 0; r < NR; ++r) {
      __m512i p[4];
      for (size_t t = 0; t < 4; ++t) {
        if (2 * t >= n) {
          p[t] = _mm512_setzero_si512();
        } else if (F == kQbQ8_0) {  // |w| times a negated where w < 0
          const __m512i x = _mm512_mask_sub_epi8(av[t], _mm512_movepi8_mask(wv[r][t]), _mm512_setzero_si512(), av[t]);
          p[t] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(wv[r][t]), x);
        } else {
          p[t] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[r][t], av[t]);
        }
      }
      const __m256i isum = N == 1 || N == 2 ? sum2(p[0]) : sum8(p);
      acc[i * NR + r] = _mm256_add_ps(acc[i * NR + r], qb_terms8<F>(isum, dw[r], mw[r], ar, k, b0, n));
    }
  }
}

// Software prefetch of the weights kQbPrefetchRows rows ahead, for rows of
// kQbPrefetchStride bytes and more. Measured (Zen 4, 1 thread, GEMVs from
// memory): Q4_0 16384 x 4096 (2304-byte rows) 5-7 -> 10-12 GB/s, Q4_1
// 32768 x 1536 (960) 8 -> 13 GB/s; but Q8_0 49152 x 576 (612) 20-25 -> 14-18:
// the hardware prefetcher keeps up with short rows, and the prefetches cost.
constexpr size_t kQbPrefetchRows = 4;
constexpr size_t kQbPrefetchStride = 768;

// Weight rows j .. j + NR against the mr activation rows.
template <int F, int NR>
inline void rows(size_t mr, size_t k, const uint8_t* a, size_t a_stride, const uint8_t* w, size_t w_stride, float* c,
                 size_t c_stride) {
  const size_t nb = k / kQbBlock, full = nb / 8 * 8;
  __m256 acc[4 * NR];
  for (__m256& v : acc) v = _mm256_setzero_ps();
  size_t b = 0;
  const bool prefetch = w_stride >= kQbPrefetchStride;
  for (; b < full; b += 8) {
    if (prefetch) {  // the same blocks kQbPrefetchRows rows on: the rows come in order
      const uint8_t* ahead = w + b * kQbBlockBytes[F] + kQbPrefetchRows * w_stride;
      for (int r = 0; r < NR; ++r) {
        for (size_t l = 0; l < 8 * kQbBlockBytes[F]; l += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(ahead + r * w_stride + l), _MM_HINT_T0);
        }
      }
    }
    group<F, 8, NR>(8, w + b * kQbBlockBytes[F], w_stride, b, mr, k, a, a_stride, acc);
  }
  const uint8_t* tail = w + b * kQbBlockBytes[F];
  if (nb - b == 1) {  // n known: one pair, reduced by sum2
    group<F, 1, NR>(1, tail, w_stride, b, mr, k, a, a_stride, acc);
  } else if (nb - b == 2) {
    group<F, 2, NR>(2, tail, w_stride, b, mr, k, a, a_stride, acc);
  } else if (b < nb) {
    group<F, 0, NR>(nb - b, tail, w_stride, b, mr, k, a, a_stride, acc);
  }
  for (size_t i = 0; i < mr; ++i) {
    for (int r = 0; r < NR; ++r) c[i * c_stride + size_t(r)] = qb_combine8(acc[i * NR + r]);
  }
}

template <int F>
void gemm(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride, const uint8_t* w, size_t w_stride,
          float* c, size_t c_stride) {
  size_t j = 0;
  for (; j + 2 <= nc; j += 2) rows<F, 2>(mr, k, a, a_stride, w + j * w_stride, w_stride, c + j, c_stride);
  if (j < nc) rows<F, 1>(mr, k, a, a_stride, w + j * w_stride, w_stride, c + j, c_stride);
}

// ---- tiles of 16 activation rows (qb.h): the lanes are the rows

// A block's 32 weights as the unsigned operand, in element order: Q4 the
// nibbles; Q8_0 w + 128 (w ^ 0x80), its extra 128 * s taken off after.
template <int F>
inline __m256i tile_weights(const uint8_t* blk) {
  if (F == kQbQ8_0) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)), _mm256_set1_epi8(char(0x80)));
  }
  const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + (F == kQbQ4_1 ? 4 : 2)));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(r, 4), r), _mm256_set1_epi8(0x0F));
}

// Block b's terms for the tile's 16 rows and NR weight rows (blk: block b
// of the first, w_stride apart), each activation vector loaded once.
template <int F, int NR>
inline void tile_terms(const uint8_t* blk, size_t w_stride, const uint8_t* tb, __m512* t) {
  alignas(32) int32_t wq[NR][8];
  __m512i isum[NR];
  for (int r = 0; r < NR; ++r) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(wq[r]), tile_weights<F>(blk + r * w_stride));
    isum[r] = _mm512_setzero_si512();
  }
  for (int c = 0; c < 8; ++c) {
    const __m512i av = _mm512_load_si512(tb + 64 * c);
    for (int r = 0; r < NR; ++r) isum[r] = _mm512_dpbusd_epi32(isum[r], _mm512_set1_epi32(wq[r][c]), av);
  }
  const uint8_t* tail = tb + 32 * kQbTileRows;
  const __m512 da = _mm512_load_ps(reinterpret_cast<const float*>(tail));
  const __m512i sa = _mm512_load_si512(tail + 64);
  for (int r = 0; r < NR; ++r) {
    const uint8_t* br = blk + r * w_stride;
    if (F == kQbQ4_0) isum[r] = _mm512_sub_epi32(isum[r], _mm512_slli_epi32(sa, 3));
    if (F == kQbQ8_0) isum[r] = _mm512_sub_epi32(isum[r], _mm512_slli_epi32(sa, 7));
    t[r] = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(qb_half(br)), da), _mm512_cvtepi32_ps(isum[r]));
    if (F == kQbQ4_1) {
      const __m512 ds = _mm512_load_ps(reinterpret_cast<const float*>(tail + 128));
      t[r] = _mm512_add_ps(t[r], _mm512_mul_ps(_mm512_set1_ps(qb_half(br + 2)), ds));
    }
  }
}

// NR weight rows (w, w_stride apart) against the tile: c's columns 0 .. NR.
template <int F, int NR>
inline void tile_rows(size_t mr, size_t k, const uint8_t* tile, const uint8_t* w, size_t w_stride, float* c,
                      size_t c_stride) {
  constexpr size_t bs = kQbBlockBytes[F];
  const size_t nb = k / kQbBlock;
  __m512 acc[8][NR];
  for (auto& lane : acc) {
    for (__m512& v : lane) v = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < nb; ++b) {
    __m512 t[NR];
    tile_terms<F, NR>(w + b * bs, w_stride, tile + b * kQbTileBlockBytes, t);
    for (int r = 0; r < NR; ++r) acc[b % 8][r] = _mm512_add_ps(acc[b % 8][r], t[r]);
  }
  for (int r = 0; r < NR; ++r) {
    // the definition's tree, lane by lane
    const __m512 lo = _mm512_add_ps(_mm512_add_ps(acc[0][r], acc[4][r]), _mm512_add_ps(acc[2][r], acc[6][r]));
    const __m512 hi = _mm512_add_ps(_mm512_add_ps(acc[1][r], acc[5][r]), _mm512_add_ps(acc[3][r], acc[7][r]));
    alignas(64) float out[16];
    _mm512_store_ps(out, _mm512_add_ps(lo, hi));
    for (size_t i = 0; i < mr; ++i) c[i * c_stride + size_t(r)] = out[i];
  }
}

template <int F>
void gemm_tile(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w, size_t w_stride, float* c,
               size_t c_stride) {
  size_t j = 0;
  for (; j + 2 <= nc; j += 2) tile_rows<F, 2>(mr, k, tile, w + j * w_stride, w_stride, c + j, c_stride);
  if (j < nc) tile_rows<F, 1>(mr, k, tile, w + j * w_stride, w_stride, c + j, c_stride);
}

}  // namespace

void qb_pack_tile_ukernel__avx512vnni(size_t rows, size_t k, const uint8_t* a, size_t a_stride, uint8_t* tile) {
  qb_pack_tile(rows, k, a, a_stride, tile);
}

void qb_q4_0_gemm_tile_ukernel_16x2__avx512vnni(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                                size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ4_0>(mr, nc, k, tile, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_tile_ukernel_16x2__avx512vnni(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                                size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ4_1>(mr, nc, k, tile, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_tile_ukernel_16x2__avx512vnni(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                                size_t w_stride, float* c, size_t c_stride) {
  gemm_tile<kQbQ8_0>(mr, nc, k, tile, w, w_stride, c, c_stride);
}

void qb_quantize_ukernel__avx512vnni(size_t k, const float* x, uint8_t* row) { qb_quantize_avx2(k, x, row); }

void qb_q4_0_gemm_ukernel_4x2__avx512vnni(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                          const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_ukernel_4x2__avx512vnni(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                          const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_1>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_ukernel_4x2__avx512vnni(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                          const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ8_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}

}  // namespace cpu
}  // namespace tern
