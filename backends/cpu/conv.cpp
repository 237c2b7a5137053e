#include "backends/cpu/conv.h"

#include <cstring>

namespace tern {
namespace cpu {
namespace {

// Output-pixel tiles per block: the row pointers of a block are built once
// and used for every column group, and a block's A rows stay in L1/L2.
constexpr int64_t kTilesPerBlock = 8;
// Multiply-adds a thread should get at least (smaller work stays on one).
constexpr int64_t kMinFlopsPerThread = int64_t(1) << 16;
// Outputs of at most this many pixels, and at most half the main tile's
// rows, go through the GEMV kernel (run_rows).
constexpr int64_t kRowsMaxPixels = kTilesPerBlock;
// Kernel rows a depthwise convolution may have (kh * kw <= 1024 at load).
constexpr int kMaxKernelRows = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t taps(const ConvGeometry& g) { return int64_t(g.kh) * g.kw; }
int64_t x_pixel(const ConvGeometry& g) { return g.x_stride ? g.x_stride : g.c; }
int64_t y_pixel(const ConvGeometry& g) { return g.y_stride ? g.y_stride : g.oc; }

// Whether a post pass over each tile (while it is in L1) must follow the
// microkernel: for an activation other than a clamp, or for a residual the
// kernel does not add. The igemm kernels add residuals themselves (their
// callers pass nullptr here); the depthwise kernels do not.
bool needs_post(const Epilogue& ep, const float* residual) {
  return residual != nullptr || (ep.activation != Activation::None && ep.activation != Activation::Clamp);
}

// The clamp a microkernel applies: the epilogue's, unless a residual must
// be added first by a post pass (depthwise).
MinMax kernel_clamp(const Epilogue& ep, const float* residual) {
  if (ep.activation == Activation::Clamp && residual == nullptr) return ep.clamp;
  return {-__builtin_inff(), __builtin_inff()};
}

// rows x cols of y (row stride ld) += residual (same layout), then the activation.
void post(const Epilogue& ep, const float* residual, float* y, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = y + i * ld;
    if (residual != nullptr) {
      const float* r = residual + i * ld;
      for (int64_t j = 0; j < cols; ++j) row[j] += r[j];
    }
    if (ep.activation == Activation::Clamp) {
      for (int64_t j = 0; j < cols; ++j) row[j] = row[j] < ep.clamp.min ? ep.clamp.min : (row[j] > ep.clamp.max ? ep.clamp.max : row[j]);
    } else if (ep.activation != Activation::None) {
      apply_activation(ep, row, static_cast<size_t>(cols));
    }
  }
}

// An output pixel's place: image b, row oy, column ox.
struct Pixel {
  int64_t b, oy, ox;
};

Pixel pixel_of(const ConvGeometry& g, int64_t q) { return {q / (g.oh * g.ow), (q / g.ow) % g.oh, q % g.ow}; }

void next_pixel(const ConvGeometry& g, Pixel* p) {
  if (++p->ox == g.ow) {
    p->ox = 0;
    if (++p->oy == g.oh) p->oy = 0, ++p->b;
  }
}

// The ks tap pointers of output pixel p, every `stride`-th entry of out:
// the input pixel each tap reads, or `zeros` where it falls in the padding.
// No division: pointers are rebuilt often enough that it would show.
void tap_pointers(const ConvGeometry& g, const float* x, const float* zeros, const Pixel& p, const float** out,
                  int64_t stride) {
  const int64_t iy0 = p.oy * g.sh - g.ph, ix0 = p.ox * g.sw - g.pw;
  const int64_t xp = x_pixel(g);
  const float* image = x + p.b * g.h * g.w * xp;
  for (int32_t ki = 0; ki < g.kh; ++ki) {
    const int64_t iy = iy0 + int64_t(ki) * g.dh;
    const bool row_in = iy >= 0 && iy < g.h;
    for (int32_t kj = 0; kj < g.kw; ++kj, out += stride) {
      const int64_t ix = ix0 + int64_t(kj) * g.dw;
      *out = row_in && ix >= 0 && ix < g.w ? image + (iy * g.w + ix) * xp : zeros;
    }
  }
}

// A kernel row's kw taps are kw * c consecutive floats of x when x is dense
// and the taps are adjacent: a tile whose pixels all have every tap inside
// horizontally then reads kh runs of kw * c floats instead of kh * kw runs
// of c. The packed weights already run [ki][kj][c], so they serve both
// ways; fewer, longer runs matter most for the few channels of a stem.
bool runs_merge(const ConvGeometry& g) { return g.kw > 1 && g.dw == 1 && x_pixel(g) == g.c && !g.depthwise; }

// A 1x1 convolution of stride 1 and no padding: a GEMM over the pixels.
bool pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.h == g.oh && g.w == g.ow;
}

// Whether `rows` pixels from p on all have their kw taps inside x horizontally.
bool inside_horizontally(const ConvGeometry& g, Pixel p, int64_t rows) {
  for (int64_t i = 0; i < rows; ++i, next_pixel(g, &p)) {
    const int64_t ix0 = p.ox * g.sw - g.pw;
    if (ix0 < 0 || ix0 + g.kw > g.w) return false;
  }
  return true;
}

// Whether output columns ox0..ox1 have all their taps inside x horizontally.
bool columns_inside(const ConvGeometry& g, int64_t ox0, int64_t ox1) {
  return ox0 * g.sw - g.pw >= 0 && ox1 * g.sw - g.pw + int64_t(g.kw - 1) * g.dw < g.w;
}

// The kh kernel-row pointers of pixel p (each kw * c floats, or `zeros`),
// every `stride`-th entry of out.
void row_pointers(const ConvGeometry& g, const float* x, const float* zeros, const Pixel& p, const float** out,
                  int64_t stride) {
  const int64_t iy0 = p.oy * g.sh - g.ph, ix0 = p.ox * g.sw - g.pw;
  const float* image = x + p.b * g.h * g.w * g.c;
  for (int32_t ki = 0; ki < g.kh; ++ki, out += stride) {
    const int64_t iy = iy0 + int64_t(ki) * g.dh;
    *out = iy >= 0 && iy < g.h ? image + (iy * g.w + ix0) * g.c : zeros;
  }
}

// Row pointers of the tiles of block mb: ptrs[tile][t * mr + i], t < ks
// taps of c floats, or t < kh merged runs of kw * c (merged[tile]); rows
// past the last pixel repeat it.
void block_pointers(const ConvGeometry& g, int mr, const float* x, const float* zeros, int64_t mb,
                    const float** ptrs, bool* merged) {
  const int64_t pixels = g.n * g.oh * g.ow, ks = taps(g);
  const int64_t first = mb * kTilesPerBlock * mr;
  if (pointwise(g)) {  // output pixel q reads input pixel q: no index arithmetic
    const int64_t xp = x_pixel(g), end = first + kTilesPerBlock * mr;
    for (int64_t q = first; q < end; ++q) ptrs[q - first] = x + (q < pixels ? q : pixels - 1) * xp;
    for (int64_t tile = 0; tile < kTilesPerBlock; ++tile) merged[tile] = false;
    return;
  }
  const bool merge = runs_merge(g);
  Pixel p = pixel_of(g, first < pixels ? first : pixels - 1);
  for (int64_t tile = 0; tile < kTilesPerBlock; ++tile) {
    const int64_t q0 = first + tile * mr;
    if (q0 >= pixels) break;
    const float** tp = ptrs + tile * ks * mr;
    const int64_t rows = pixels - q0 < mr ? pixels - q0 : mr;
    if (p.ox + rows <= g.ow && columns_inside(g, p.ox, p.ox + rows - 1)) {
      // One output row, every tap inside horizontally: pixel i's pointers
      // are pixel 0's moved i strides right (those in the padding stay).
      merged[tile] = merge;
      const int64_t n = merge ? g.kh : ks, step = g.sw * x_pixel(g);
      if (merge) {
        row_pointers(g, x, zeros, p, tp, mr);
      } else {
        tap_pointers(g, x, zeros, p, tp, mr);
      }
      for (int64_t t = 0; t < n; ++t) {
        const float** r = tp + t * mr;
        const int64_t d = r[0] == zeros ? 0 : step;
        for (int64_t i = 1; i < mr; ++i) r[i] = r[0] + (i < rows ? i : rows - 1) * d;
      }
      p.ox += rows;
      if (p.ox == g.ow && q0 + rows < pixels) {
        p.ox = 0;
        if (++p.oy == g.oh) p.oy = 0, ++p.b;
      }
      continue;
    }
    merged[tile] = merge && inside_horizontally(g, p, rows);
    const int64_t n = merged[tile] ? g.kh : ks;
    for (int i = 0; i < mr; ++i) {
      if (q0 + i < pixels) {
        if (merged[tile]) {
          row_pointers(g, x, zeros, p, tp + i, mr);
        } else {
          tap_pointers(g, x, zeros, p, tp + i, mr);
        }
        if (q0 + i + 1 < pixels) next_pixel(g, &p);
      } else {
        for (int64_t t = 0; t < n; ++t) tp[t * mr + i] = tp[t * mr + i - 1];  // repeat the last row
      }
    }
  }
}

// Whether run_igemm takes run_rows for g: few output pixels.
bool by_rows(const ConvGeometry& g, const Isa& isa) {
  const int64_t pixels = g.n * g.oh * g.ow;
  return pixels <= kRowsMaxPixels && pixels * 2 <= isa.igemm_main.mr;
}

// Output pixel q's columns [0, oc) of a convolution that run_rows takes, through
// the GEMV kernel: taps, kc and n as block_pointers made them for it.
void row_pixel(const ConvGeometry& g, const Isa& isa, const float* const* taps_q, size_t kc, size_t n,
               const float* packed, const float* residual, float* y, const Epilogue& ep, int64_t col0, int64_t col1) {
  const IgemmConfig& k = isa.igemm_row;
  const size_t panel_floats = size_t(kPanel) * (1 + size_t(taps(g)) * size_t(g.c));
  const MinMax clamp = kernel_clamp(ep, nullptr);
  for (; col0 < col1; col0 += k.nr) {
    const int64_t nc = col1 - col0 < k.nr ? col1 - col0 : k.nr;
    k.ukernel(1, size_t(nc), kc, n, taps_q, packed + (col0 / kPanel) * panel_floats, panel_floats, y + col0,
              size_t(y_pixel(g)), residual ? residual + col0 : nullptr, clamp);
    if (needs_post(ep, nullptr)) post(ep, nullptr, y + col0, 1, nc, y_pixel(g));
  }
}

// Few output pixels (a linear layer over one row, a classifier head): one
// row at a time through the GEMV kernel, which reads each weight once per
// row instead of computing mr rows to keep one. Threads split the columns.
void run_rows(const ConvGeometry& g, const Isa& isa, const float* x, const float* packed, const float* zeros,
              const float* residual, float* y, const Epilogue& ep, RunContext& ctx) {
  const int64_t nr = isa.igemm_row.nr;
  const int64_t pixels = g.n * g.oh * g.ow, ks = taps(g);
  const int64_t groups = ceil_div(g.oc, nr);
  const int64_t yp = y_pixel(g);
  ctx.parallel_for(groups, grain_for(kMinFlopsPerThread, {pixels, nr, ks, g.c}), [&](RunContext& t, int64_t u0, int64_t u1) {
    const float** ptrs = static_cast<const float**>(t.scratch());
    bool merged[kTilesPerBlock];
    block_pointers(g, 1, x, zeros, 0, ptrs, merged);  // pixels <= kTilesPerBlock: one block of 1-row tiles
    const int64_t col0 = u0 * nr, col1 = u1 * nr < g.oc ? u1 * nr : g.oc;
    for (int64_t q = 0; q < pixels; ++q) {
      const size_t kc = size_t(merged[q] ? g.kw * g.c : g.c), n = size_t(merged[q] ? g.kh : ks);
      row_pixel(g, isa, ptrs + q * ks, kc, n, packed, residual ? residual + q * yp : nullptr, y + q * yp, ep, col0,
                col1);
    }
  });
}

void run_igemm(const ConvGeometry& g, const Isa& isa, const float* x, const float* packed, const float* zeros,
               const float* residual, float* y, const Epilogue& ep, RunContext& ctx) {
  const IgemmConfig& main = isa.igemm_main;
  const int mr = main.mr;
  const int64_t pixels = g.n * g.oh * g.ow, ks = taps(g);
  if (by_rows(g, isa)) {
    run_rows(g, isa, x, packed, zeros, residual, y, ep, ctx);
    return;
  }
  const int64_t m_tiles = ceil_div(pixels, mr), blocks = ceil_div(m_tiles, kTilesPerBlock);
  const int64_t groups = ceil_div(g.oc, main.nr);
  const size_t panel_floats = size_t(kPanel) * (1 + size_t(ks) * size_t(g.c));
  const MinMax clamp = kernel_clamp(ep, nullptr);
  const bool post_pass = needs_post(ep, nullptr);
  const bool group_major = g.oc > pixels;
  const int64_t yp = y_pixel(g);
  ctx.parallel_for(blocks * groups, grain_for(kMinFlopsPerThread, {kTilesPerBlock * mr * main.nr, ks, g.c}), [&](RunContext& t, int64_t u0, int64_t u1) {
    const float** ptrs = static_cast<const float**>(t.scratch());
    bool merged[kTilesPerBlock];
    int64_t built = -1;
    for (int64_t u = u0; u < u1; ++u) {
      // weights bigger than the activations (a linear layer over few rows):
      // consecutive units share a weight panel, so it is read from memory once
      const int64_t mb = group_major ? u % blocks : u / groups;
      const int64_t col0 = (group_major ? u / blocks : u % groups) * main.nr;
      if (mb != built) block_pointers(g, mr, x, zeros, built = mb, ptrs, merged);
      const int64_t col1 = g.oc - col0 < main.nr ? g.oc : col0 + main.nr;
      for (int64_t tile = 0; tile < kTilesPerBlock; ++tile) {
        const int64_t q0 = (mb * kTilesPerBlock + tile) * mr;
        if (q0 >= pixels) break;
        const int64_t rows = pixels - q0 < mr ? pixels - q0 : mr;
        const int64_t kc = merged[tile] ? g.kw * g.c : g.c, n = merged[tile] ? g.kh : ks;
        const float* res = residual ? residual + q0 * yp : nullptr;  // residual: y dense
        igemm_columns(isa, rows, ptrs + tile * ks * mr, kc, n, packed, int64_t(panel_floats), col0, col1, y + q0 * yp,
                      yp, res, clamp);
        if (post_pass) post(ep, nullptr, y + q0 * yp + col0, rows, col1 - col0, yp);
      }
    }
  });
}

// Output columns [lo, hi) whose taps all fall inside the input horizontally.
void interior_columns(const ConvGeometry& g, int64_t* lo, int64_t* hi) {
  *lo = (g.pw + g.sw - 1) / g.sw;
  const int64_t last = g.w - 1 - int64_t(g.kw - 1) * g.dw + g.pw;  // ox * sw <= last
  *hi = last < 0 ? 0 : last / g.sw + 1;
  if (*hi > g.ow) *hi = g.ow;
  if (*lo > *hi) *lo = *hi;
}

// One output row of a depthwise convolution from its kh input rows:
// in_rows[ki] is the start of input row oy * sh - ph + ki * dh (c floats a
// pixel), or nullptr where that row is padding. The interior columns go
// through the row microkernel, the edge columns through per-pixel tap
// pointers (ptrs: room for ow * kh * kw).
void dwconv_row(const ConvGeometry& g, const Isa& isa, const float* const* in_rows, const float* packed,
                const float* zeros, float* out, MinMax clamp, const float** ptrs) {
  const int64_t ks = taps(g);
  int64_t lo, hi;
  interior_columns(g, &lo, &hi);
  if (hi > lo) {
    const float* rows[kMaxKernelRows];
    size_t ki0 = size_t(g.kh), ki1 = 0;
    for (int32_t ki = 0; ki < g.kh; ++ki) {
      if (in_rows[ki] == nullptr) continue;
      ki0 = size_t(ki) < ki0 ? size_t(ki) : ki0;
      ki1 = size_t(ki) + 1;
      rows[ki] = in_rows[ki] + (lo * g.sw - g.pw) * g.c;
    }
    if (ki0 >= ki1) ki0 = ki1 = 0;  // every row in the padding: bias only
    isa.dwconv_rows(size_t(g.c), size_t(hi - lo), size_t(g.kh), size_t(g.kw), ki0, ki1, rows, size_t(g.sw * g.c),
                    size_t(g.dw * g.c), packed, out + lo * g.oc, size_t(g.oc), clamp);
  }
  const int64_t edges[2][2] = {{0, lo}, {hi, g.ow}};
  for (const auto& e : edges) {
    if (e[0] >= e[1]) continue;
    const float** tp = ptrs;
    for (int64_t ox = e[0]; ox < e[1]; ++ox) {
      for (int32_t ki = 0; ki < g.kh; ++ki) {
        for (int32_t kj = 0; kj < g.kw; ++kj) {
          const int64_t ix = ox * g.sw - g.pw + int64_t(kj) * g.dw;
          *tp++ = in_rows[ki] != nullptr && ix >= 0 && ix < g.w ? in_rows[ki] + ix * g.c : zeros;
        }
      }
    }
    isa.dwconv(size_t(g.c), size_t(e[1] - e[0]), size_t(ks), ptrs, packed, out + e[0] * g.oc, size_t(g.oc), clamp);
  }
}

// The kh input rows output row oy of an image reads: input row iy at
// rows + (iy - first) * row_floats, nullptr where iy is padding.
void input_rows(const ConvGeometry& g, int64_t oy, const float* rows, int64_t first, int64_t row_floats,
                const float** in_rows) {
  for (int32_t ki = 0; ki < g.kh; ++ki) {
    const int64_t iy = oy * g.sh - g.ph + int64_t(ki) * g.dh;
    in_rows[ki] = iy >= 0 && iy < g.h ? rows + (iy - first) * row_floats : nullptr;
  }
}

void run_dwconv(const ConvGeometry& g, const Isa& isa, const float* x, const float* packed, const float* zeros,
                const float* residual, float* y, const Epilogue& ep, RunContext& ctx) {
  const int64_t rows = g.n * g.oh, ks = taps(g);
  const MinMax clamp = kernel_clamp(ep, residual);
  const bool post_pass = needs_post(ep, residual);
  ctx.parallel_for(rows, grain_for(kMinFlopsPerThread, {g.ow, g.c, ks}), [&](RunContext& t, int64_t r0, int64_t r1) {
    const float** ptrs = static_cast<const float**>(t.scratch());
    const float* in_rows[kMaxKernelRows];
    for (int64_t r = r0; r < r1; ++r) {
      float* out = y + r * g.ow * g.oc;
      input_rows(g, r % g.oh, x + r / g.oh * g.h * g.w * g.c, 0, g.w * g.c, in_rows);
      dwconv_row(g, isa, in_rows, packed, zeros, out, clamp, ptrs);
      if (post_pass) post(ep, residual ? residual + r * g.ow * g.oc : nullptr, out, g.ow, g.oc, g.oc);
    }
  });
}

// `count` pixels from x (x_pixel(g) floats apart) through the pointwise
// convolution s into y (yp floats a pixel), on this thread: the calls
// run_igemm makes for the same pixels, so the same bits. ptrs: room for mr.
void pointwise_pixels(const ConvStage& s, const Isa& isa, const float* x, int64_t count, float* y, int64_t yp,
                      const float* residual, const float** ptrs) {
  const ConvGeometry& g = s.g;
  const int mr = isa.igemm_main.mr;
  const MinMax clamp = kernel_clamp(s.ep, nullptr);
  const bool post_pass = needs_post(s.ep, nullptr);
  const int64_t xp = x_pixel(g);
  if (by_rows(g, isa)) {  // as run_igemm would: the GEMV kernel's sums, not the tile kernel's
    for (int64_t q = 0; q < count; ++q) {
      const float* row = x + q * xp;
      row_pixel(g, isa, &row, size_t(g.c), 1, s.packed, residual ? residual + q * yp : nullptr, y + q * yp, s.ep, 0,
                g.oc);
    }
    return;
  }
  for (int64_t q0 = 0; q0 < count; q0 += mr) {
    const int64_t rows = count - q0 < mr ? count - q0 : mr;
    for (int64_t i = 0; i < mr; ++i) ptrs[i] = x + (q0 + (i < rows ? i : rows - 1)) * xp;
    igemm_columns(isa, rows, ptrs, g.c, 1, s.packed, kPanel * (1 + g.c), 0, g.oc, y + q0 * yp, yp,
                  residual ? residual + q0 * yp : nullptr, clamp);
    if (post_pass) post(s.ep, nullptr, y + q0 * yp, rows, g.oc, yp);
  }
}

// Pixels a chain's pointwise stages take per call at least: a pointwise
// call over one short row would leave most of its last tile empty.
constexpr int64_t kChainBatchPixels = 64;

// Per-thread scratch of a chain: a window of consecutive rows of t (the
// rows the current output row reads, and a batch computed ahead), the
// depthwise output rows waiting for the projection, and pointers.
struct ChainScratch {
  int64_t ahead;       // rows of t computed per pointwise call, at least
  int64_t window;      // rows of t the window holds
  int64_t pending;     // depthwise output rows per projection call (0: no projection)
  int64_t row_floats;  // of one row of t (w * c)
  size_t ptrs;         // pointers: the depthwise edges' or a pointwise tile's

  ChainScratch(const ConvStage* stages, int count, const Isa& isa) {
    const ConvGeometry& d = stages[1].g;
    ahead = (kChainBatchPixels + d.w - 1) / d.w;
    if (ahead < d.sh) ahead = d.sh;
    window = int64_t(d.kh - 1) * d.dh + 1 + ahead;
    pending = count > 2 ? (kChainBatchPixels + d.ow - 1) / d.ow : 0;
    row_floats = d.w * d.c;
    const size_t edge = size_t(d.ow) * size_t(taps(d)), tile = size_t(isa.igemm_main.mr);
    ptrs = edge > tile ? edge : tile;
  }
  int64_t window_floats() const { return (window * row_floats + 15) / 16 * 16; }
  int64_t pending_floats(const ConvGeometry& d) const { return (pending * d.ow * d.oc + 15) / 16 * 16; }
  size_t bytes(const ConvGeometry& d) const {
    return sizeof(float) * size_t(window_floats() + pending_floats(d)) + sizeof(float*) * ptrs;
  }
};

// Input rows [first, last] that output row oy of d reads, clipped to x.
void rows_read(const ConvGeometry& d, int64_t oy, int64_t* first, int64_t* last) {
  const int64_t top = oy * d.sh - d.ph, bottom = top + int64_t(d.kh - 1) * d.dh;
  *first = top > 0 ? top : 0;
  *last = bottom < d.h - 1 ? bottom : d.h - 1;
}

}  // namespace

void igemm_columns(const Isa& isa, int64_t rows, const float* const* a, int64_t kc, int64_t ks, const float* packed,
                   int64_t panel_floats, int64_t col0, int64_t col1, float* c, int64_t ldc, const float* res,
                   MinMax clamp) {
  const IgemmConfig& main = isa.igemm_main;
  for (; col0 < col1; col0 += main.nr) {
    const int64_t nc = col1 - col0 < main.nr ? col1 - col0 : main.nr;
    const IgemmConfig& k = nc > kPanel ? main : isa.igemm_tail;
    k.ukernel(size_t(rows), size_t(nc), size_t(kc), size_t(ks), a, packed + (col0 / kPanel) * panel_floats,
              size_t(panel_floats), c + col0, size_t(ldc), res ? res + col0 : nullptr, clamp);
  }
}

size_t conv_packed_floats(const ConvGeometry& g) {
  const size_t ks = size_t(taps(g));
  if (g.depthwise) return size_t(ceil_div(g.c, kPanel)) * kPanel * (1 + ks);
  return size_t(ceil_div(g.oc, kPanel)) * kPanel * (1 + ks * size_t(g.c));
}

size_t conv_zero_floats(const ConvGeometry& g) { return size_t(runs_merge(g) ? g.kw * g.c : g.c); }

size_t conv_scratch_bytes(const ConvGeometry& g, const Isa& isa) {
  const size_t ks = size_t(taps(g));
  if (g.depthwise) return size_t(g.ow) * ks * sizeof(float*);
  return size_t(kTilesPerBlock) * ks * size_t(isa.igemm_main.mr) * sizeof(float*);
}

void pack_conv_weights(const ConvGeometry& g, const float* weight, const float* bias, float* packed) {
  const int64_t ks = taps(g);
  memset(packed, 0, conv_packed_floats(g) * sizeof(float));
  if (g.depthwise) {
    for (int64_t ch = 0; ch < g.c; ++ch) {
      float* block = packed + (ch / kPanel) * kPanel * (1 + ks);
      const int64_t lane = ch % kPanel;
      block[lane] = bias ? bias[ch] : 0.f;
      for (int64_t t = 0; t < ks; ++t) block[kPanel * (1 + t) + lane] = weight[ch * ks + t];
    }
    return;
  }
  const size_t panel_floats = size_t(kPanel) * (1 + size_t(ks) * size_t(g.c));
  for (int64_t o = 0; o < g.oc; ++o) {
    float* panel = packed + (o / kPanel) * panel_floats;
    const int64_t lane = o % kPanel;
    panel[lane] = bias ? bias[o] : 0.f;
    for (int64_t t = 0; t < ks; ++t) {
      for (int64_t ci = 0; ci < g.c; ++ci) {
        panel[kPanel * (1 + t * g.c + ci) + lane] = weight[(o * g.c + ci) * ks + t];
      }
    }
  }
}

size_t winograd_element_floats(int64_t c, int64_t oc) {
  return size_t(ceil_div(oc, kPanel)) * kPanel * (1 + size_t(c));
}

// One panel (16 output channels) at a time, input channel by input channel:
// the panel's 16 kernels are gathered lane-minor, so that both halves of
// G g G^T (G down the columns, then along the rows) are loops over the 16
// lanes the compiler vectorizes, and every element lands as one contiguous
// row of 16 floats in its packed panel. Lanes past oc stay zero.
void pack_winograd_weights(int64_t c, int64_t oc, const float* weight, float* packed) {
  const size_t element = winograd_element_floats(c, oc), panel_floats = size_t(kPanel) * (1 + size_t(c));
  const int64_t panels = ceil_div(oc, kPanel);
  for (int t = 0; t < 16; ++t) {  // bias rows (zero) of every panel
    for (int64_t p = 0; p < panels; ++p) memset(packed + t * element + size_t(p) * panel_floats, 0, sizeof(float) * kPanel);
  }
  float g[9][kPanel], r[4][3][kPanel];  // g: taps (row-major 3x3) by lane; r = G g, 4 x 3
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t lanes = oc - p * kPanel < kPanel ? oc - p * kPanel : kPanel;
    memset(g, 0, sizeof(g));
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t lane = 0; lane < lanes; ++lane) {
        const float* k = weight + ((p * kPanel + lane) * c + ci) * 9;
        for (int tap = 0; tap < 9; ++tap) g[tap][lane] = k[tap];
      }
      for (int j = 0; j < 3; ++j) {  // column j: G's rows (1 0 0), (1 1 1)/2, (1 -1 1)/2, (0 0 1)
        for (int l = 0; l < kPanel; ++l) {
          const float top = g[j][l], mid = g[3 + j][l], bottom = g[6 + j][l];
          r[0][j][l] = top;
          r[1][j][l] = 0.5f * (top + mid + bottom);
          r[2][j][l] = 0.5f * (top - mid + bottom);
          r[3][j][l] = bottom;
        }
      }
      const size_t row = size_t(p) * panel_floats + size_t(kPanel) * (1 + size_t(ci));
      for (int i = 0; i < 4; ++i) {  // row i of G g, times G^T: elements 4i .. 4i + 3
        float* u0 = packed + (4 * i) * element + row;
        float* u1 = u0 + element;
        float* u2 = u1 + element;
        float* u3 = u2 + element;
        for (int l = 0; l < kPanel; ++l) {
          const float left = r[i][0][l], mid = r[i][1][l], right = r[i][2][l];
          u0[l] = left;
          u1[l] = 0.5f * (left + mid + right);
          u2[l] = 0.5f * (left - mid + right);
          u3[l] = right;
        }
      }
    }
  }
}

void run_conv(const ConvGeometry& g, const Isa& isa, const float* x, const float* packed, const float* zeros,
              const float* residual, float* y, const Epilogue& ep, RunContext& ctx) {
  if (g.depthwise) {
    run_dwconv(g, isa, x, packed, zeros, residual, y, ep, ctx);
  } else {
    run_igemm(g, isa, x, packed, zeros, residual, y, ep, ctx);
  }
}

size_t conv_chain_scratch_bytes(const ConvStage* stages, int count, const Isa& isa) {
  return ChainScratch(stages, count, isa).bytes(stages[1].g);
}

void run_conv_chain(const ConvStage* stages, int count, const Isa& isa, const float* x, const float* zeros, float* y,
                    RunContext& ctx) {
  const ConvStage& ex = stages[0];
  const ConvStage& dw = stages[1];
  const ConvStage* pr = count > 2 ? &stages[2] : nullptr;
  const ConvGeometry& d = dw.g;
  const ChainScratch layout(stages, count, isa);
  const int64_t rows = d.n * d.oh, xp = x_pixel(ex.g), rf = layout.row_floats;
  const MinMax dw_clamp = kernel_clamp(dw.ep, dw.residual);
  const bool dw_post = needs_post(dw.ep, dw.residual);
  const int64_t yp = pr ? y_pixel(pr->g) : d.oc;
  // one range of output rows per thread: a range's first row computes every
  // row of t it reads, later rows only the ones after those
  const int64_t per_thread = rows / ctx.thread_count();
  ctx.parallel_for(rows, per_thread > 1 ? per_thread : 1, [&](RunContext& t, int64_t r0, int64_t r1) {
    float* win = static_cast<float*>(t.scratch());  // rows [lo, hi) of t in image `image`
    float* pending = win + layout.window_floats();  // depthwise output rows [p0, r)
    const float** ptrs = reinterpret_cast<const float**>(pending + layout.pending_floats(d));
    int64_t image = -1, lo = 0, hi = 0, p0 = r0;
    const float* in_rows[kMaxKernelRows];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / d.oh, oy = r % d.oh;
      int64_t first, last;
      rows_read(d, oy, &first, &last);
      if (b != image || first > hi) image = b, lo = hi = first;  // a new image, or rows skipped (kh < sh)
      if (last >= hi) {
        // compute rows [hi, end): at least `ahead` of them, not past what
        // this range's output rows in this image read
        const int64_t last_row = b == (r1 - 1) / d.oh ? (r1 - 1) % d.oh : d.oh - 1;
        int64_t limit_first, limit;
        rows_read(d, last_row, &limit_first, &limit);
        int64_t end = hi + layout.ahead > last + 1 ? hi + layout.ahead : last + 1;
        if (end > limit + 1) end = limit + 1;
        if (end - lo > layout.window) {  // slide: keep rows [first, hi)
          memmove(win, win + (first - lo) * rf, sizeof(float) * size_t((hi - first) * rf));
          lo = first;
          if (end - lo > layout.window) end = lo + layout.window;
        }
        pointwise_pixels(ex, isa, x + (b * d.h + hi) * d.w * xp, (end - hi) * d.w, win + (hi - lo) * rf, d.c, nullptr,
                         ptrs);
        hi = end;
      }
      input_rows(d, oy, win, lo, rf, in_rows);
      float* out = pr ? pending + (r - p0) * d.ow * d.oc : y + r * d.ow * d.oc;
      dwconv_row(d, isa, in_rows, dw.packed, zeros, out, dw_clamp, ptrs);
      if (dw_post) post(dw.ep, dw.residual ? dw.residual + r * d.ow * d.oc : nullptr, out, d.ow, d.oc, d.oc);
      if (pr != nullptr && (r + 1 - p0 == layout.pending || r + 1 == r1)) {
        const float* res = pr->residual ? pr->residual + p0 * d.ow * yp : nullptr;
        pointwise_pixels(*pr, isa, pending, (r + 1 - p0) * d.ow, y + p0 * d.ow * yp, yp, res, ptrs);
        p0 = r + 1;
      }
    }
  });
}

void apply_activation(const Epilogue& ep, float* v, size_t n) {
  const VactUkernel vact = ep.vact ? ep.vact : f32_vact_ukernel__scalar;
  switch (ep.activation) {
    case Activation::Hardswish: vact(5, v, n); break;
    case Activation::Sigmoid: vact(0, v, n); break;
    case Activation::Tanh: vact(1, v, n); break;
    case Activation::Gelu: vact(2, v, n); break;
    case Activation::Silu: vact(3, v, n); break;
    default: break;
  }
}

}  // namespace cpu
}  // namespace tern
