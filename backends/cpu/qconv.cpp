// Int8 convolution driver (qconv.h).
#include "backends/cpu/qconv.h"

#include <cmath>
#include <cstring>

namespace tern {
namespace cpu {
namespace {

int64_t round_up4(int64_t v) { return (v + 3) & ~int64_t(3); }
int64_t panels(int64_t n) { return (n + 15) / 16; }
int64_t taps(const ConvGeometry& g) { return int64_t(g.kh) * g.kw; }
int64_t x_pixel(const ConvGeometry& g) { return g.x_stride ? g.x_stride : g.c; }
int64_t y_pixel(const ConvGeometry& g) { return g.y_stride ? g.y_stride : g.oc; }

// Where each tap of an output pixel reads, relative to its first tap's
// input pixel: offsets[ki * kw + kj] (bytes), for pixels whose window lies
// inside x.
struct TapOffsets {
  int64_t at[1024];  // kh * kw <= 1024 (ops/qlinear.cpp)

  explicit TapOffsets(const ConvGeometry& g) {
    for (int ki = 0; ki < g.kh; ++ki) {
      for (int kj = 0; kj < g.kw; ++kj) at[ki * g.kw + kj] = (int64_t(ki) * g.dh * g.w + int64_t(kj) * g.dw) * x_pixel(g);
    }
  }
};

// out[t * stride] = what tap t of output pixel (b, oy, ox) reads: its input
// pixel, or zeros outside x.
inline void fill_taps(const ConvGeometry& g, const TapOffsets& offs, const int8_t* x, const int8_t* zeros, int64_t b,
                      int64_t oy, int64_t ox, const int8_t** out, int64_t stride) {
  const int64_t iy0 = oy * g.sh - g.ph, ix0 = ox * g.sw - g.pw;
  const int64_t ks = int64_t(g.kh) * g.kw;
  if (iy0 >= 0 && ix0 >= 0 && iy0 + int64_t(g.kh - 1) * g.dh < g.h && ix0 + int64_t(g.kw - 1) * g.dw < g.w) {
    const int8_t* base = x + ((b * g.h + iy0) * g.w + ix0) * x_pixel(g);  // the whole window inside x
    for (int64_t t = 0; t < ks; ++t) out[t * stride] = base + offs.at[t];
    return;
  }
  for (int ki = 0; ki < g.kh; ++ki) {
    const int64_t iy = iy0 + int64_t(ki) * g.dh;
    for (int kj = 0; kj < g.kw; ++kj) {
      const int64_t ix = ix0 + int64_t(kj) * g.dw;
      const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
      out[(ki * g.kw + kj) * stride] = inside ? x + ((b * g.h + iy) * g.w + ix) * x_pixel(g) : zeros;
    }
  }
}

// A convolution whose inputs per tap are not a multiple of 4 (a 3-channel
// stem) copies each row's taps into one padded row (im2col): the kernels
// then read whole groups of 4 (no byte-by-byte tail at every tap; AMX loads
// the rows as a tile). The packed weights already hold each tap's kc4
// inputs side by side, zeros past kc: the same GEMM of depth ks * kc4.
// Up to 4 KiB a row (per-thread scratch: mr rows).
bool im2col(const ConvGeometry& g) { return !g.depthwise && g.c % 4 != 0 && taps(g) * round_up4(g.c) <= 4096; }

// Row `row` of the im2col copy: output pixel (b, oy, ox)'s taps, each kc4
// bytes (zeros: what a padding tap reads, kc4 bytes of x_zero_point). A tap
// copies its kc4 bytes whole where they lie inside x (the bytes past c are
// the next pixel's, multiplied by the packed weights' zeros), else c bytes and
// zeros.
inline void im2col_row(const ConvGeometry& g, const TapOffsets& offs, const int8_t* x, const int8_t* x_end,
                       const int8_t* zeros, int64_t b, int64_t oy, int64_t ox, int8_t* row) {
  const int64_t kc4 = round_up4(g.c), ks = taps(g);
  const int64_t iy0 = oy * g.sh - g.ph, ix0 = ox * g.sw - g.pw;
  if (kc4 == 4 && iy0 >= 0 && ix0 >= 0 && iy0 + int64_t(g.kh - 1) * g.dh < g.h && ix0 + int64_t(g.kw - 1) * g.dw < g.w) {
    const int8_t* base = x + ((b * g.h + iy0) * g.w + ix0) * x_pixel(g);  // the whole window inside x
    if (base + offs.at[ks - 1] + 4 <= x_end) {  // the last tap is the furthest
      for (int64_t t = 0; t < ks; ++t) {
        int32_t v;
        memcpy(&v, base + offs.at[t], 4);
        memcpy(row + 4 * t, &v, 4);
      }
      return;
    }
  }
  const int8_t* taps_at[1024];
  fill_taps(g, offs, x, zeros, b, oy, ox, taps_at, 1);
  for (int64_t t = 0; t < ks; ++t, row += kc4) {
    const int8_t* src = taps_at[t];
    if (kc4 == 4 && (src == zeros || src + 4 <= x_end)) {
      int32_t v;
      memcpy(&v, src, 4);
      memcpy(row, &v, 4);
    } else if (src == zeros || src + kc4 <= x_end) {
      memcpy(row, src, size_t(kc4));
    } else {
      memcpy(row, src, size_t(g.c));
      memset(row + g.c, 0, size_t(kc4 - g.c));
    }
  }
}

}  // namespace

int64_t qs8_channels(const ConvGeometry& g) { return panels(g.oc) * 16; }

size_t qs8_packed_bytes(const ConvGeometry& g) {
  if (g.depthwise) return size_t(panels(g.c) * taps(g) * 16);
  return size_t(panels(g.oc) * taps(g) * round_up4(g.c) * 16);
}

void pack_qs8_weights(const ConvGeometry& g, const int8_t* weight, int8_t* packed) {
  const int64_t ks = taps(g);
  for (size_t i = 0; i < qs8_packed_bytes(g); ++i) packed[i] = 0;
  if (g.depthwise) {
    for (int64_t ch = 0; ch < g.c; ++ch) {
      for (int64_t t = 0; t < ks; ++t) packed[(ch / 16) * ks * 16 + t * 16 + ch % 16] = weight[ch * ks + t];
    }
    return;
  }
  const int64_t kc4 = round_up4(g.c);
  for (int64_t o = 0; o < g.oc; ++o) {
    int8_t* panel = packed + (o / 16) * ks * kc4 * 16;
    for (int64_t ci = 0; ci < g.c; ++ci) {
      for (int64_t t = 0; t < ks; ++t) {
        panel[t * kc4 * 16 + (ci / 4) * 64 + (o % 16) * 4 + ci % 4] = weight[(o * g.c + ci) * ks + t];
      }
    }
  }
}

void qs8_weight_sums(const ConvGeometry& g, const int8_t* packed, int32_t* sums) {
  // One pass over the packed bytes in memory order (it runs at every load).
  const int64_t n = qs8_channels(g), ks = taps(g);
  for (int64_t j = 0; j < n; ++j) sums[j] = 0;
  if (g.depthwise) {  // block b = [ks][16]
    for (int64_t b = 0; b < n / 16; ++b) {
      for (int64_t t = 0; t < ks; ++t, packed += 16) {
        for (int l = 0; l < 16; ++l) sums[b * 16 + l] += packed[l];
      }
    }
  } else {  // panel p = [ks * kc4 / 4][16 columns][4]
    const int64_t groups = ks * round_up4(g.c) / 4;
    for (int64_t p = 0; p < n / 16; ++p) {
      for (int64_t gi = 0; gi < groups; ++gi, packed += 64) {
        for (int l = 0; l < 16; ++l) {
          sums[p * 16 + l] += packed[4 * l] + packed[4 * l + 1] + packed[4 * l + 2] + packed[4 * l + 3];
        }
      }
    }
  }
  for (int64_t j = g.oc; j < n; ++j) sums[j] = 0;  // whatever a file holds past oc
}

void run_qs8_linear_f32(const Qs8Conv& q, const Qs8Kernels& k, const int8_t* x, float* y, RunContext& ctx) {
  const ConvGeometry& g = q.g;
  const int64_t m = g.n, mr = k.mr, tiles = (m + mr - 1) / mr, np = panels(g.oc);
  const size_t panel_bytes = size_t(round_up4(g.c) * 16);
  ctx.parallel_for(tiles, grain_for(1 << 14, {mr, g.c, g.oc}), [&](RunContext& t, int64_t t0, int64_t t1) {
    const int8_t** ptrs = static_cast<const int8_t**>(t.scratch());
    if (k.begin != nullptr) k.begin(size_t(g.c));
    // Panels outer, this thread's rows inner: a group's weights (k * 64 bytes)
    // stay in cache over the rows, instead of the whole matrix streaming
    // through once per row tile.
    for (int64_t p = 0; p < np; p += k.panels) {  // k.panels panels a call, fewer at the end
      const int64_t count = np - p < k.panels ? np - p : k.panels;
      const int64_t nc = g.oc - p * 16 < count * 16 ? g.oc - p * 16 : count * 16;
      const Qs8Requant rq{q.init + p * 16, q.scale + p * 16, q.offset + p * 16, 0.0f, 0.0f};
      for (int64_t tile = t0; tile < t1; ++tile) {
        const int64_t r0 = tile * mr, rows = m - r0 < mr ? m - r0 : mr;
        for (int64_t i = 0; i < mr; ++i) ptrs[i] = x + (r0 + (i < rows ? i : rows - 1)) * g.c;
        k.igemm_f32[count - 1](size_t(rows), size_t(nc), size_t(g.c), 1, ptrs, q.packed + p * panel_bytes,
                               y + r0 * g.oc + p * 16, size_t(g.oc), rq);
      }
    }
    if (k.end != nullptr) k.end();
  });
}

int64_t qs8_requant(const ConvGeometry& g, const int8_t* packed, float x_scale, int32_t x_zero_point,
                    const float* w_scales, const float* bias, float y_scale, int32_t y_zero_point, const Qs8Kernels& k,
                    int32_t* init, float* scale, float* offset) {
  qs8_weight_sums(g, packed, init);  // the columns' weight sums, from the packed weights the kernels read
  const bool shifted = k.unsigned_a && !g.depthwise;
  int64_t bad = -1;
  for (int64_t j = 0; j < g.oc; ++j) {
    const int32_t sum = init[j];
    init[j] = -x_zero_point * sum - (shifted ? 128 * sum : 0);
    // Each factor is finite, their quotients need not be: bounded here, in
    // double, so that fma(acc, scale, offset) with |acc| < 2^31 stays finite
    // (no NaN reaches the conversion to int8) and the casts to float fit.
    const double s = double(x_scale) * double(w_scales[j]) / double(y_scale);
    const double o = (bias ? double(bias[j]) : 0.0) / double(y_scale) + y_zero_point;
    const bool ok = std::fabs(s) <= kQs8MaxRequant && std::fabs(o) <= kQs8MaxRequant;  // false for NaN
    if (!ok && bad < 0) bad = j;
    scale[j] = ok ? static_cast<float>(s) : 0.0f;
    offset[j] = ok ? static_cast<float>(o) : 0.0f;
  }
  // Two loops on purpose: as one (zero every column, then fill those below
  // oc), GCC 12.2 -O3 moved the zeroing into a memset after the loop.
  for (int64_t j = g.oc; j < qs8_channels(g); ++j) init[j] = 0, scale[j] = offset[j] = 0.0f;
  return bad;
}

namespace {

// A thread's share of a GEMM runs in blocks of row tiles: each tile's row
// pointers (and im2col rows) set up once, then each group of k.panels panels
// over the block's tiles, so that a group's weights stay in cache over the
// tiles instead of every weight streaming through once per tile (one group:
// blocks of 1 tile). Scratch: block_tiles slots of slot_bytes.
struct TileSlots {
  size_t ptr_bytes, slot_bytes;
  int64_t block_tiles;

  TileSlots(const ConvGeometry& g, const Qs8Kernels& k) {
    const int64_t ks = taps(g);
    ptr_bytes = (sizeof(const int8_t*) * size_t(k.mr * ks) + 63) / 64 * 64;
    slot_bytes = ptr_bytes + (im2col(g) ? size_t(k.mr * ks * round_up4(g.c) + 63) / 64 * 64 : 0);
    const int64_t fit = int64_t((size_t(64) << 10) / slot_bytes);  // 64 KiB of slots
    block_tiles = panels(g.oc) <= k.panels ? 1 : fit < 1 ? 1 : fit > 8 ? 8 : fit;
  }
};

}  // namespace

size_t qs8_conv_scratch_bytes(const ConvGeometry& g, const Qs8Kernels& k) {
  if (g.depthwise) return sizeof(const int8_t*) * size_t(g.ow * taps(g));
  const TileSlots slots(g, k);
  return slots.slot_bytes * size_t(slots.block_tiles);
}

void run_qs8_conv(const Qs8Conv& q, const Qs8Kernels& k, const int8_t* x, const int8_t* zeros, int8_t* y,
                  RunContext& ctx) {
  const ConvGeometry& g = q.g;
  const int64_t ks = taps(g), yp = y_pixel(g);
  const TapOffsets offs(g);
  if (g.depthwise) {
    const Qs8Requant rq{q.init, q.scale, q.offset, q.qmin, q.qmax};
    ctx.parallel_for(g.n * g.oh, grain_for(1 << 14, {g.ow, ks, g.c}), [&](RunContext& t, int64_t r0, int64_t r1) {
      const int8_t** ptrs = static_cast<const int8_t**>(t.scratch());
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / g.oh, oy = r % g.oh;
        for (int64_t ox = 0; ox < g.ow; ++ox) fill_taps(g, offs, x, zeros, b, oy, ox, ptrs + ox * ks, 1);
        k.dwconv(size_t(g.c), size_t(g.ow), size_t(ks), ptrs, q.packed, y + r * g.ow * yp, size_t(yp), rq);
      }
    });
    return;
  }
  const int64_t pixels = g.n * g.oh * g.ow, mr = k.mr;
  const bool pointwise = ks == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h && g.ow == g.w;
  const int64_t tiles = (pixels + mr - 1) / mr, np = panels(g.oc), depth = ks * round_up4(g.c);
  const size_t panel_bytes = size_t(depth * 16);
  const bool copy = im2col(g);
  const size_t kc = size_t(copy ? depth : g.c), taps_a_row = size_t(copy ? 1 : ks);  // what the igemm calls get
  const int8_t* x_end = x + g.n * g.h * g.w * x_pixel(g);
  const TileSlots slots(g, k);
  ctx.parallel_for(tiles, grain_for(1 << 14, {mr, ks, g.c, g.oc}), [&](RunContext& t, int64_t t0, int64_t t1) {
    uint8_t* scratch = static_cast<uint8_t*>(t.scratch());
    if (k.begin != nullptr) k.begin(kc);
    for (int64_t b0 = t0; b0 < t1; b0 += slots.block_tiles) {
      const int64_t block = t1 - b0 < slots.block_tiles ? t1 - b0 : slots.block_tiles;
      for (int64_t j = 0; j < block; ++j) {  // the row pointers of tile b0 + j, in slot j
        const int8_t** ptrs = reinterpret_cast<const int8_t**>(scratch + size_t(j) * slots.slot_bytes);
        int8_t* rows_buf = reinterpret_cast<int8_t*>(scratch + size_t(j) * slots.slot_bytes + slots.ptr_bytes);
        const int64_t p0 = (b0 + j) * mr, rows = pixels - p0 < mr ? pixels - p0 : mr;
        if (copy) {  // each row's taps side by side: one tap of depth inputs
          int64_t b = p0 / (g.oh * g.ow), oy = p0 / g.ow % g.oh, ox = p0 % g.ow;
          for (int64_t i = 0; i < mr; ++i) {
            if (i < rows) {
              im2col_row(g, offs, x, x_end, zeros, b, oy, ox, rows_buf + i * depth);
              if (++ox == g.ow) ox = 0, oy = oy + 1 == g.oh ? (++b, 0) : oy + 1;
            }
            ptrs[i] = rows_buf + (i < rows ? i : rows - 1) * depth;  // rows past the last repeat it
          }
        } else if (pointwise) {  // output pixel p reads input pixel p
          for (int64_t i = 0; i < mr; ++i) ptrs[i] = x + (p0 + (i < rows ? i : rows - 1)) * x_pixel(g);
        } else {
          int64_t b = p0 / (g.oh * g.ow), oy = p0 / g.ow % g.oh, ox = p0 % g.ow;  // then stepped, not divided
          for (int64_t i = 0; i < mr; ++i) {
            if (i < rows) {
              fill_taps(g, offs, x, zeros, b, oy, ox, ptrs + i, mr);
              if (++ox == g.ow) ox = 0, oy = oy + 1 == g.oh ? (++b, 0) : oy + 1;
            } else {  // rows past the last repeat it
              for (int64_t tap = 0; tap < ks; ++tap) ptrs[tap * mr + i] = ptrs[tap * mr + rows - 1];
            }
          }
        }
      }
      for (int64_t p = 0; p < np; p += k.panels) {  // k.panels panels a call, fewer at the end
        const int64_t count = np - p < k.panels ? np - p : k.panels;
        const int64_t nc = g.oc - p * 16 < count * 16 ? g.oc - p * 16 : count * 16;
        const Qs8Requant rq{q.init + p * 16, q.scale + p * 16, q.offset + p * 16, q.qmin, q.qmax};
        for (int64_t j = 0; j < block; ++j) {
          const int64_t p0 = (b0 + j) * mr, rows = pixels - p0 < mr ? pixels - p0 : mr;
          const int8_t* const* ptrs = reinterpret_cast<const int8_t* const*>(scratch + size_t(j) * slots.slot_bytes);
          k.igemm[count - 1](size_t(rows), size_t(nc), kc, taps_a_row, ptrs, q.packed + p * panel_bytes,
                             y + p0 * yp + p * 16, size_t(yp), rq);
        }
      }
    }
    if (k.end != nullptr) k.end();
  });
}

}  // namespace cpu
}  // namespace tern
