// The cpu backend's block-quantized microkernels (qb): a linear layer whose
// weights stay in GGUF's block formats, read in place from the file, times
// activations quantized on the fly to int8 blocks of 32 (llama.cpp's q8
// blocks). One file per ISA like the others (ukernels.h): scalar (always
// built, the reference), avx2, avx512vnni, neondot.
//
// Weights: N rows of K elements (K a multiple of 32), each row K / 32 blocks
// one after the other (python/tern/llm/blocks.py), w_stride bytes apart:
//   Q4_0  18 bytes: d f16, qs[16]          w_q = nib(j) - 8
//   Q4_1  20 bytes: d f16, m f16, qs[16]   w_q = nib(j)
//   Q8_0  34 bytes: d f16, qs[32] int8     w_q = qs[j]
// nib(j): the low half of qs[j] for j < 16, the high half of qs[j - 16] after.
// The halves convert to float exactly (qb_half and avx2 by moving bits, no
// F16C needed; avx512vnni by vcvtph2ps, which differs only in a NaN's
// payload).
//
// Quantized activations, one row per activation row (QbKernels::quantize),
// qb_row_bytes(K) bytes apart (a multiple of 64):
//   [q: K int8][d: K / 32 float][s: K / 32 int32][zeros up to the stride]
// Per block b of 32 values x (all in float32):
//   amax = max |x_j| (NaNs skipped), d = amax / 127, id = d != 0 ? 1 / d : 0,
//   q_j = round_half_even(min(max(x_j * id, -127), 127))  (a NaN -> -127),
//   s = sum q_j (an int32).
//
// The product (QbKernels::gemm), the one definition every ISA follows bit for
// bit (files compiled with -ffp-contract=off: no fused multiply-add):
//   per block b: isum_b = sum_j w_q[j] * a_q[j]      (exact, int32)
//     term_b = (float(d_w) * d_a) * float(isum_b)
//     Q4_1:  term_b = term_b + float(m_w) * (d_a * float(s_a))
//   acc[0..7] = +0; for b in order: acc[b % 8] = acc[b % 8] + term_b
//   y = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))
// (the 8 lanes are one vector of 8 blocks; a missing last block's lane adds
// nothing: acc never is -0, so adding +-0 leaves it as it is.)
//
//   const QbKernels& k = qb_kernels_for(qs8.name);        // isa.cpp: the set that goes with the int8 one
//   k.quantize(K, x, row);                                // K floats -> qb_row_bytes(K) bytes
//   k.gemm[kQbQ4_0](1, N, K, row, 0, w, w_stride, y, 0);  // y[j] = row . weight row j, j < N
//
// Kernels are stateless and thread-safe; backends/cpu/ops/blocklinear.cpp
// drives them (threads, tiles, bias).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernel_names.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

constexpr size_t kQbBlock = 32;

// The formats, as the op and the kernel sets index them (QbKernels::gemm).
enum QbFormat : int { kQbQ4_0 = 0, kQbQ4_1 = 1, kQbQ8_0 = 2, kQbFormats = 3 };
// GGML's type numbers (cpu.fbs BlockLinear.format) and bytes a block.
constexpr int kQbGgmlCode[kQbFormats] = {2, 3, 8};
constexpr size_t kQbBlockBytes[kQbFormats] = {18, 20, 34};

// One row of k floats (a multiple of 32) into its quantized row (layout above).
using QbQuantizeUkernel = void (*)(size_t k, const float* x, uint8_t* row);

// c[i * c_stride + j] = the product of quantized activation row i (at
// a + i * a_stride) and weight row j (at w + j * w_stride), for i < mr <=
// QbKernels::mr and j < nc (any count: the kernels walk the weight rows nr
// at a time, each block unpacked once for the mr rows, each activation
// block loaded once for the nr rows).
using QbGemmUkernel = void (*)(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride, const uint8_t* w,
                               size_t w_stride, float* c, size_t c_stride);

// Tiles of activation rows (optional, for many rows: a prompt): 16
// quantized rows (standard layout above) transposed so that a 512-bit
// vector holds 4 bytes of each of the 16 rows, and each weight's 4 bytes,
// broadcast, meet all 16 rows in one vpdpbusd (no sums across lanes to
// take, no weight repacked); AVX2: 8 rows a vector (maddubs, madd); NEON:
// 4 rows a vector, the weight's 4 bytes a lane of SDOT's indexed form. Per block b, kQbTileBlockBytes bytes
// (qb_tile_bytes(k) a tile):
//   q:  [8 chunks][16 rows][4 int8]   (chunk c: elements 4c .. 4c + 3)
//   d:  [16 float]  s: [16 int32]  ds: [16 float] (d * float(s), Q4_1's)
// Rows past the tile's count are zeros. The products are the definition's,
// bit for bit.
constexpr size_t kQbTileRows = 16;
constexpr size_t kQbTileBlockBytes = 32 * kQbTileRows + 12 * kQbTileRows;  // a block of a tile: 704
// rows <= 16 quantized rows (a, a_stride apart) into one tile.
using QbPackTileUkernel = void (*)(size_t rows, size_t k, const uint8_t* a, size_t a_stride, uint8_t* tile);
// c[i * c_stride + j] for i < mr <= 16 (the tile's rows) and j < nc.
using QbGemmTileUkernel = void (*)(size_t mr, size_t nc, size_t k, const uint8_t* tile, const uint8_t* w,
                                   size_t w_stride, float* c, size_t c_stride);

struct QbKernels {
  const char* name;
  int mr;  // activation rows per gemm call
  int nr;  // weight rows a gemm kernel's inner step takes (its name's tile: mr x nr)
  QbQuantizeUkernel quantize;
  QbGemmUkernel gemm[kQbFormats];  // by QbFormat: gemm[0] Q4_0, gemm[1] Q4_1, gemm[2] Q8_0
  // The tiled product, or nullptrs: pack_tile, then gemm_tile[format].
  QbPackTileUkernel pack_tile;
  QbGemmTileUkernel gemm_tile[kQbFormats];
  KernelNames<8> names;
};

// The helpers below are compiled into files of every ISA: an unnamed
// namespace gives each file its own copy (ukernels/common/avx512.h says why).
namespace {

// Bytes of one quantized activation row of k values (k a multiple of 32).
constexpr size_t qb_row_bytes(size_t k) { return (k + 8 * (k / kQbBlock) + 63) / 64 * 64; }
// Bytes of one tile of 16 rows of k values (a multiple of 64).
constexpr size_t qb_tile_bytes(size_t k) { return (k / kQbBlock) * kQbTileBlockBytes; }

// The half at p (little-endian) as float, exactly, by moving bits: normal
// halves rebiased, subnormals as m * 2^-24 (a product of normal floats, so
// flush-to-zero modes do not touch it), infinities and NaNs kept.
inline float qb_half(const uint8_t* p) {
  const uint32_t h = uint32_t(p[0]) | uint32_t(p[1]) << 8;
  const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  uint32_t bits;
  if (e == 0) {
    const float f = float(m) * 0x1p-24f;
    __builtin_memcpy(&bits, &f, 4);
  } else if (e == 31) {
    bits = 0x7F800000u | m << 13;
  } else {
    bits = (e + 112) << 23 | m << 13;
  }
  bits |= sign;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// rows <= 16 quantized rows (a, a_stride apart) into one tile (layout above),
// in plain C++: the ISAs' pack_tile kernels (once per 16 rows of a call).
inline void qb_pack_tile(size_t rows, size_t k, const uint8_t* a, size_t a_stride, uint8_t* tile) {
  const size_t nb = k / kQbBlock;
  __builtin_memset(tile, 0, qb_tile_bytes(k));
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* row = a + r * a_stride;
    const float* d = reinterpret_cast<const float*>(row + k);
    const int32_t* s = reinterpret_cast<const int32_t*>(row + k + 4 * nb);
    for (size_t b = 0; b < nb; ++b) {
      uint8_t* tb = tile + b * kQbTileBlockBytes;
      for (size_t c = 0; c < 8; ++c) __builtin_memcpy(tb + 64 * c + 4 * r, row + 32 * b + 4 * c, 4);
      uint8_t* tail = tb + 32 * kQbTileRows;
      const float ds = d[b] * float(s[b]);
      __builtin_memcpy(tail + 4 * r, &d[b], 4);
      __builtin_memcpy(tail + 64 + 4 * r, &s[b], 4);
      __builtin_memcpy(tail + 128 + 4 * r, &ds, 4);
    }
  }
}

// The spec's last step: the 8 lanes combined by the fixed tree.
inline float qb_combine(const float* acc) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

}  // namespace

// The kernels, defined in ukernels/<isa>/qb_gemm.cpp; the tile is mr x nr,
// activation rows x weight rows per inner step.
UkernelFn<QbQuantizeUkernel> qb_quantize_ukernel__scalar;
UkernelFn<QbGemmUkernel> qb_q4_0_gemm_ukernel_4x1__scalar, qb_q4_1_gemm_ukernel_4x1__scalar,
    qb_q8_0_gemm_ukernel_4x1__scalar;

UkernelFn<QbQuantizeUkernel> qb_quantize_ukernel__avx2;
UkernelFn<QbPackTileUkernel> qb_pack_tile_ukernel__avx2;
UkernelFn<QbGemmTileUkernel> qb_q4_0_gemm_tile_ukernel_16x1__avx2, qb_q4_1_gemm_tile_ukernel_16x1__avx2,
    qb_q8_0_gemm_tile_ukernel_16x1__avx2;
UkernelFn<QbGemmUkernel> qb_q4_0_gemm_ukernel_4x1__avx2, qb_q4_1_gemm_ukernel_4x1__avx2,
    qb_q8_0_gemm_ukernel_4x1__avx2;

UkernelFn<QbQuantizeUkernel> qb_quantize_ukernel__avx512vnni;
UkernelFn<QbPackTileUkernel> qb_pack_tile_ukernel__avx512vnni;
UkernelFn<QbGemmTileUkernel> qb_q4_0_gemm_tile_ukernel_16x2__avx512vnni, qb_q4_1_gemm_tile_ukernel_16x2__avx512vnni,
    qb_q8_0_gemm_tile_ukernel_16x2__avx512vnni;
UkernelFn<QbGemmUkernel> qb_q4_0_gemm_ukernel_4x2__avx512vnni, qb_q4_1_gemm_ukernel_4x2__avx512vnni,
    qb_q8_0_gemm_ukernel_4x2__avx512vnni;

UkernelFn<QbQuantizeUkernel> qb_quantize_ukernel__neondot;
UkernelFn<QbPackTileUkernel> qb_pack_tile_ukernel__neondot;
UkernelFn<QbGemmTileUkernel> qb_q4_0_gemm_tile_ukernel_16x1__neondot, qb_q4_1_gemm_tile_ukernel_16x1__neondot,
    qb_q8_0_gemm_tile_ukernel_16x1__neondot;
UkernelFn<QbGemmUkernel> qb_q4_0_gemm_ukernel_4x1__neondot, qb_q4_1_gemm_ukernel_4x1__neondot,
    qb_q8_0_gemm_ukernel_4x1__neondot;

// The qb kernel sets this build has and this CPU runs, best first (scalar
// last when max allows).
int supported_qb_kernels(const QbKernels** out, int max);
// The set that goes with an int8 kernel set (Qs8Kernels::name): avx512vnni
// for avx512vnni and amx, avx2, neondot, else scalar.
const QbKernels& qb_kernels_for(const char* qs8_name);

}  // namespace cpu
}  // namespace tern
