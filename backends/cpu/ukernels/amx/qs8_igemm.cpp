// qs8_igemm_ukernel_16x{16,32,48,64}__amx and their float-output twins
// (ukernels/qs8.h), on AMX-INT8 tiles: TDPBSSD multiplies a 16 x 64 tile of
// signed bytes (16 rows, 64 inputs) by a 16 x 64 one holding 64 inputs of 16
// columns in the packed layout (a panel's 16 groups of 4 inputs: one tile,
// 1 KB contiguous), adding the int32 products to a 16 x 16 accumulator tile.
// Signed times signed: no offset to correct (unsigned_a false).
//
// Tiles: 0-3 the accumulators of up to 4 panels; 4 and 5 a row block and a
// panel's 64 inputs; 6 and 7 the same for the last kc4 % 64 inputs of a tap.
// Rows at one stride load straight from the activations; others are
// gathered from their pointers into a 16 x 64 buffer (zeros past kc) for each
// 64 inputs. The accumulators go through memory to the
// requantization (AVX-512, as the VNNI kernel's). The tile configuration
// depends on kc only: a thread loads it once for its share of an op
// (qs8_igemm_begin__amx, Qs8Kernels::begin; loading it costs about 130 cycles, more
// than a shallow call's dot products) and releases the tiles at the end
// (qs8_igemm_end__amx): no tile state outlives an op.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backends/cpu/ukernels/common/avx512.h"
#include "backends/cpu/ukernels/common/qs8_store_avx512.h"
#include "backends/cpu/ukernels/qs8.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tern {
namespace cpu {
namespace {

// tileloadd with a memory clobber: GCC 12's _tile_loadd does not tell the
// compiler that it reads memory, so the stores that gather rows into a
// buffer could be moved past it or dropped. Tile numbers are pasted into
// the instruction, as in GCC's own macro.
#define TERN_TILE_LOADD(tile, base, stride)                                                  \
  __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm" #tile "|tileloadd\t%%tmm" #tile ", [%0+%1*1]}" \
                   : : "r"(static_cast<const void*>(base)), "r"(static_cast<long>(stride)) : "memory")

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

constexpr size_t kMr = 16;

// Rows i < 16 of tap t, inputs [k0, k0 + n) (n <= 64, zeros past kc), into buf [16][64].
inline void gather(const int8_t* const* x, size_t k0, size_t kc, int8_t* buf) {
  const __mmask64 m = tail_mask64(kc - k0);
  for (size_t i = 0; i < kMr; ++i) _mm512_store_si512(buf + 64 * i, _mm512_maskz_loadu_epi8(m, x[i] + k0));
}

// Accumulator tile p += rows x panel p's weights, for inputs [k0, k0 + 64)
// (tiles 4 and 5) or a tap's tail (6 and 7) of the rows at x; wk: the first
// panel's weights of those inputs, the next panels `panel` bytes apart. A
// macro: GCC's tile intrinsics paste the tile numbers into their asm.
#define TERN_AMX_CHUNK(A, B)                                        \
  if (direct) {                                                     \
    TERN_TILE_LOADD(A, x[0] + k0, stride);                              \
  } else {                                                          \
    gather(x, k0, kc, rows);                                        \
    TERN_TILE_LOADD(A, rows, 64);                                       \
  }                                                                 \
  TERN_TILE_LOADD(B, wk, 64);                                           \
  _tile_dpbssd(0, A, B);                                            \
  if constexpr (kPanels > 1) {                                      \
    TERN_TILE_LOADD(B, wk + panel, 64);                                 \
    _tile_dpbssd(1, A, B);                                          \
  }                                                                 \
  if constexpr (kPanels > 2) {                                      \
    TERN_TILE_LOADD(B, wk + 2 * panel, 64);                             \
    _tile_dpbssd(2, A, B);                                          \
  }                                                                 \
  if constexpr (kPanels > 3) {                                      \
    TERN_TILE_LOADD(B, wk + 3 * panel, 64);                             \
    _tile_dpbssd(3, A, B);                                          \
  }

template <int kPanels, bool kTail>
inline void chunk(const int8_t* const* x, size_t k0, size_t kc, bool direct, ptrdiff_t stride, int8_t* rows,
                  const int8_t* wk, size_t panel) {
  if constexpr (kTail) {
    TERN_AMX_CHUNK(6, 7)
  } else {
    TERN_AMX_CHUNK(4, 5)
  }
}
#undef TERN_AMX_CHUNK

template <int kPanels, typename Out>
void igemm(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a, const int8_t* w, Out* c,
           size_t c_stride, const Qs8Requant& rq) {
  const size_t kc4 = (kc + 3) & ~size_t(3), tail = kc4 % 64, full = kc4 - tail;
  const size_t panel = ks * kc4 * 16;
  _tile_zero(0);
  if constexpr (kPanels > 1) _tile_zero(1);
  if constexpr (kPanels > 2) _tile_zero(2);
  if constexpr (kPanels > 3) _tile_zero(3);
  alignas(64) int8_t rows[kMr * 64];
  for (size_t t = 0; t < ks; ++t) {
    const int8_t* const* x = a + t * kMr;
    const int8_t* wt = w + t * kc4 * 16;
    // Rows at one stride (consecutive pixels of a row, a linear layer's rows;
    // 0 for one row repeated) load straight from x when each row has kc4 bytes.
    const ptrdiff_t stride = x[1] - x[0];
    bool direct = kc == kc4;
    for (size_t i = 2; i < kMr; ++i) direct &= x[i] - x[i - 1] == stride;
    for (size_t k0 = 0; k0 < full; k0 += 64) chunk<kPanels, false>(x, k0, kc, direct, stride, rows, wt + k0 * 16, panel);
    if (tail != 0) chunk<kPanels, true>(x, full, kc, direct, stride, rows, wt + full * 16, panel);
  }
  alignas(64) int32_t acc[kPanels][kMr * 16];
  _tile_stored(0, acc[0], 64);
  if constexpr (kPanels > 1) _tile_stored(1, acc[kPanels > 1 ? 1 : 0], 64);
  if constexpr (kPanels > 2) _tile_stored(2, acc[kPanels > 2 ? 2 : 0], 64);
  if constexpr (kPanels > 3) _tile_stored(3, acc[kPanels > 3 ? 3 : 0], 64);
  const qs8_avx512::RowStore<kPanels> out(rq, nc);
  __m512i init[kPanels];
  for (int p = 0; p < kPanels; ++p) init[p] = _mm512_loadu_si512(rq.init + 16 * p);
  for (size_t i = 0; i < mr; ++i) {
    __m512i row[kPanels];
    for (int p = 0; p < kPanels; ++p) row[p] = _mm512_add_epi32(_mm512_load_si512(acc[p] + 16 * i), init[p]);
    out.store(row, c + i * c_stride);
  }
}

}  // namespace

void qs8_igemm_begin__amx(size_t kc) {
  const size_t tail = ((kc + 3) & ~size_t(3)) % 64;
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  if (tail != 0) cfg.colsb[6] = uint16_t(tail), cfg.rows[7] = uint8_t(tail / 4);
  // ldtilecfg with the whole 64 bytes as the operand: GCC 12's
  // _tile_loadconfig names only the first 8, and the stores to the rest
  // were optimized away (a SIGILL at the first tile instruction).
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

void qs8_igemm_end__amx() { _tile_release(); }

void qs8_igemm_ukernel_16x16__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                  const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<1, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_16x16__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                      const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<1, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_ukernel_16x32__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                  const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<2, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_16x32__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                      const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<2, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_ukernel_16x48__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                  const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<3, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_16x48__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                      const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<3, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_ukernel_16x64__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                  const int8_t* w, int8_t* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<4, int8_t>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

void qs8_igemm_f32_ukernel_16x64__amx(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* a,
                                      const int8_t* w, float* c, size_t c_stride, const Qs8Requant& rq) {
  igemm<4, float>(mr, nc, kc, ks, a, w, c, c_stride, rq);
}

}  // namespace cpu
}  // namespace tern
