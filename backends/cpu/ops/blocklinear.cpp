// The block-quantized linear layer (cpu.fbs BlockLinear): GGUF's Q4_0, Q4_1
// and Q8_0 rows read in place from the payload, times x quantized at each
// call to int8 blocks of 32 (ukernels/qb.h defines both, the same bits on
// every ISA).
//
// Work: x's rows are quantized into the calling thread's scratch, which the
// other threads then read (nothing else of this op uses scratch). One row
// (decoding a token) is a GEMV over the n weight rows, split over threads in
// contiguous ranges of kRowTile rows: the weights stream through once. More
// rows (a prompt) run in tiles of a chunk of weight rows (about kChunkBytes,
// so it stays in cache) by a block of x's rows, the kernel taking mr rows of
// x at a time so that each weight block is unpacked once for all of them;
// with a kernel set that has tiles of 16 rows (qb.h) and kMinTileRows rows
// or more, the blocks of x's rows are those tiles, packed once into
// scratch after the quantized rows.
#include <cstring>

#include "backends/cpu/loader.h"
#include "backends/cpu/ukernels/qb.h"

namespace tern {
namespace cpu {
namespace {

constexpr int64_t kRowTile = 16;                 // weight rows a GEMV range is a multiple of
constexpr int64_t kChunkBytes = int64_t(1) << 16;  // of weight rows in one tile of a GEMM
constexpr int64_t kRowBlock = 64;                // x's rows in one tile of a GEMM
constexpr int64_t kMinTileRows = 8;              // the fewest rows that run as tiles of 16 (when the set has them)

struct BlockLinearOp {
  const float* x;     // [m, k]
  float* y;           // [m, n]
  const float* bias;  // n, or nullptr
  const uint8_t* w;   // [n, w_stride]: the file's rows
  int64_t w_stride;
  int64_t m, k, n;
  QbQuantizeUkernel quantize;
  QbGemmUkernel gemm;
  int mr;
  QbPackTileUkernel pack_tile;  // or nullptr
  QbGemmTileUkernel gemm_tile;
};

int qb_format(int32_t code) {
  for (int f = 0; f < kQbFormats; ++f) {
    if (kQbGgmlCode[f] == code) return f;
  }
  return -1;
}

void add_bias(const BlockLinearOp& o, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  if (o.bias == nullptr) return;
  for (int64_t i = i0; i < i1; ++i) {
    float* y = o.y + i * o.n;
    for (int64_t j = j0; j < j1; ++j) y[j] = y[j] + o.bias[j];
  }
}

// y's rows i0 .. i1 and columns j0 .. j1, from the quantized rows xq.
void tile(const BlockLinearOp& o, const uint8_t* xq, size_t rb, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t i = i0; i < i1; i += o.mr) {
    const size_t mr = size_t(i1 - i < o.mr ? i1 - i : o.mr);
    o.gemm(mr, size_t(j1 - j0), size_t(o.k), xq + size_t(i) * rb, rb, o.w + j0 * o.w_stride, size_t(o.w_stride),
           o.y + i * o.n + j0, size_t(o.n));
  }
  add_bias(o, i0, i1, j0, j1);
}

}  // namespace

Error prepare_BlockLinear(Loader& ld, uint32_t oi, const fb::BlockLinear& l, CpuOp* op) {
  BlockLinearOp* par = ld.params<BlockLinearOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *b = nullptr;
  TERN_CHECK_OK(ld.value(oi, l.x(), 2, false, &x));
  TERN_CHECK_OK(ld.value(oi, l.y(), 2, true, &y));
  // the file's rows as they are, read only at run: the payload's (int8) or a delegate input's (uint8)
  TERN_CHECK_OK(ld.bytes_of(oi, l.weights(), 2, "weights", &w));
  if (l.bias() >= 0) TERN_CHECK_OK(ld.constant_of(oi, l.bias(), 1, false, "bias", &b));
  const int f = qb_format(l.format());
  TERN_CPU_CHECK(ld, f >= 0, "op %u (%s): block format %d is none of Q4_0 (2), Q4_1 (3), Q8_0 (8)", oi, op->nodes,
                 l.format());
  const int64_t m = x->sizes[0], k = x->sizes[1], n = y->sizes[1];
  const int64_t row_bytes = k / int64_t(kQbBlock) * int64_t(kQbBlockBytes[f]);
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, m >= 1);
  TERN_CPU_NEED(failed, y->sizes[0] == m);
  TERN_CPU_NEED(failed, k >= 1);
  TERN_CPU_NEED(failed, k % int64_t(kQbBlock) == 0);
  TERN_CPU_NEED(failed, k <= (1 << 24));
  TERN_CPU_NEED(failed, n >= 1);
  TERN_CPU_NEED(failed, n <= (1 << 24));
  TERN_CPU_NEED(failed, w->sizes[0] == n);
  TERN_CPU_NEED(failed, w->sizes[1] == row_bytes);
  TERN_CPU_NEED(failed, b == nullptr || b->numel == n);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): block-quantized linear [%lld, %lld] -> %lld (format %d): its weights "
                     "[%lld, %lld] or bias do not fit", oi, op->nodes, (long long)m, (long long)k, (long long)n,
                     l.format(), (long long)w->sizes[0], (long long)w->sizes[1]);
  }
  const QbKernels& kernels = qb_kernels_for(ld.qs8.name);
  *par = BlockLinearOp{x->data, y->data, b ? b->data : nullptr, reinterpret_cast<const uint8_t*>(w->data),
                       row_bytes, m, k, n, kernels.quantize, kernels.gemm[f], kernels.mr, kernels.pack_tile,
                       kernels.gemm_tile[f]};
  // m * k <= 2^40 (a value's elements), a row at most 1.25 k + 64 bytes, a
  // tile's row 1.375 k: no overflow. Scratch: the quantized rows, then the tiles.
  size_t scratch = size_t(m) * qb_row_bytes(size_t(k));
  if (kernels.pack_tile != nullptr && m >= kMinTileRows) {
    scratch += (size_t(m) + kQbTileRows - 1) / kQbTileRows * qb_tile_bytes(size_t(k));
  }
  ld.need_scratch(scratch);
  return Error::Ok;
}

namespace {

// m >= kMinTileRows with tiles: each tile's rows quantized and packed, then
// tiles of a chunk of weight rows by one tile of x's rows.
void run_tiles(const BlockLinearOp& o, uint8_t* xq, RunContext& ctx) {
  const size_t rb = qb_row_bytes(size_t(o.k)), tb = qb_tile_bytes(size_t(o.k));
  const int64_t rows = int64_t(kQbTileRows), tiles = (o.m + rows - 1) / rows;
  uint8_t* packed = xq + size_t(o.m) * rb;  // rb: a multiple of 64, so the tiles are 64-byte aligned
  ctx.parallel_for(tiles, 1, [&](RunContext&, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t * rows, i1 = i0 + rows < o.m ? i0 + rows : o.m;
      for (int64_t i = i0; i < i1; ++i) o.quantize(size_t(o.k), o.x + i * o.k, xq + size_t(i) * rb);
      o.pack_tile(size_t(i1 - i0), size_t(o.k), xq + size_t(i0) * rb, rb, packed + size_t(t) * tb);
    }
  });
  int64_t chunk = kChunkBytes / o.w_stride;
  chunk = chunk < 1 ? 1 : chunk;
  const int64_t chunks = (o.n + chunk - 1) / chunk;
  ctx.parallel_for(chunks * tiles, 1, [&](RunContext&, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t j0 = u / tiles * chunk, j1 = j0 + chunk < o.n ? j0 + chunk : o.n, t = u % tiles;
      const int64_t i0 = t * rows, i1 = i0 + rows < o.m ? i0 + rows : o.m;
      o.gemm_tile(size_t(i1 - i0), size_t(j1 - j0), size_t(o.k), packed + size_t(t) * tb, o.w + j0 * o.w_stride,
                  size_t(o.w_stride), o.y + i0 * o.n + j0, size_t(o.n));
      add_bias(o, i0, i1, j0, j1);
    }
  });
}

}  // namespace

void run_BlockLinear(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const BlockLinearOp& o = params_of<BlockLinearOp>(cpu_op);
  uint8_t* xq = static_cast<uint8_t*>(ctx.scratch());  // this thread's; the others read it below
  if (o.pack_tile != nullptr && o.m >= kMinTileRows) {
    run_tiles(o, xq, ctx);
    return;
  }
  const size_t rb = qb_row_bytes(size_t(o.k));
  if (o.m == 1) {
    o.quantize(size_t(o.k), o.x, xq);
  } else {
    ctx.parallel_for(o.m, grain_for(1 << 15, {o.k}), [&](RunContext&, int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o.quantize(size_t(o.k), o.x + i * o.k, xq + size_t(i) * rb);
    });
  }
  if (o.m == 1) {  // a GEMV: contiguous ranges of weight rows
    const int64_t units = (o.n + kRowTile - 1) / kRowTile;
    ctx.parallel_for(units, grain_for(kChunkBytes, {kRowTile, o.w_stride}), [&](RunContext&, int64_t u0, int64_t u1) {
      tile(o, xq, rb, 0, 1, u0 * kRowTile, u1 * kRowTile < o.n ? u1 * kRowTile : o.n);
    });
    return;
  }
  // tiles: a chunk of weight rows (a multiple of 4) by a block of x's rows
  int64_t chunk = kChunkBytes / o.w_stride / 4 * 4;
  chunk = chunk < 4 ? 4 : chunk;
  const int64_t chunks = (o.n + chunk - 1) / chunk, blocks = (o.m + kRowBlock - 1) / kRowBlock;
  ctx.parallel_for(chunks * blocks, 1, [&](RunContext&, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t j0 = u / blocks * chunk, i0 = u % blocks * kRowBlock;
      tile(o, xq, rb, i0, i0 + kRowBlock < o.m ? i0 + kRowBlock : o.m, j0, j0 + chunk < o.n ? j0 + chunk : o.n);
    }
  });
}

}  // namespace cpu
}  // namespace tern
