#include "kernels/portable/util/conv.h"

namespace tern {
namespace portable {
namespace {

// im2col chunks hold about 1 MB (256 Ki floats) so col stays in L2/L3.
constexpr int64_t kColBudgetFloats = 256 * 1024;
constexpr int64_t kColMinCols = 64;

void fill_zero(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = 0.f;
}

// dst[o - o0] for o in [o0, o1) of one output row: the tap's input row `irow`
// at o * stride + off, zero outside [lo, hi).
void gather_row(const float* irow, int64_t stride, int64_t off, int64_t lo, int64_t hi, int64_t o0,
                int64_t o1, float* dst) {
  const int64_t a = lo > o0 ? (lo < o1 ? lo : o1) : o0;  // clamp(lo, o0, o1)
  const int64_t b = hi < o1 ? (hi > a ? hi : a) : o1;    // clamp(hi, a, o1)
  fill_zero(dst, a - o0);
  if (stride == 1) {
    for (int64_t o = a; o < b; ++o) dst[o - o0] = irow[o + off];
  } else {
    for (int64_t o = a; o < b; ++o) dst[o - o0] = irow[o * stride + off];
  }
  fill_zero(dst + (b - o0), o1 - b);
}

}  // namespace

Error read_int_list(PrepareContext& ctx, const EValue& v, const char* name, int n, bool allow_empty,
                    int64_t* out) {
  if (v.tag != Tag::IntList) {
    return ctx.fail(Error::InvalidProgram, "%s must be an int list, got %s", name, tag_name(v.tag));
  }
  const size_t len = v.ints.size();
  if (len == 0 && allow_empty) {
    for (int i = 0; i < n; ++i) out[i] = 0;
    return Error::Ok;
  }
  if (len != 1 && len != static_cast<size_t>(n)) {
    return ctx.fail(Error::InvalidProgram, "%s must have 1 or %d entries, got %zu", name, n, len);
  }
  for (int i = 0; i < n; ++i) out[i] = v.ints[len == 1 ? 0 : i];
  return Error::Ok;
}

int64_t conv_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

void conv_tap_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t* lo,
                    int64_t* hi) {
  int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t h = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

int64_t conv_im2col_cols(const ConvGeometry& g) {
  const int64_t k = int64_t(g.c / g.groups) * g.kh * g.kw;
  const int64_t pixels = int64_t(g.oh) * g.ow;
  int64_t cols = kColBudgetFloats / (k > 0 ? k : 1) / kColMinCols * kColMinCols;
  if (cols < kColMinCols) cols = kColMinCols;
  return cols < pixels ? cols : pixels;
}

void conv_im2col(const ConvGeometry& g, const float* in, int64_t cg, int64_t q0, int64_t cols,
                 float* col) {
  for (int64_t ci = 0; ci < cg; ++ci) {
    const float* plane = in + ci * g.h * g.w;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t off = kj * g.dw - g.pw;
        int64_t lo, hi;
        conv_tap_range(off, g.sw, g.w, g.ow, &lo, &hi);
        // walk the chunk's pixels one output row segment at a time
        for (int64_t q = q0; q < q0 + cols;) {
          const int64_t oh = q / g.ow, o0 = q % g.ow;
          const int64_t o1 = o0 + (q0 + cols - q) < g.ow ? o0 + (q0 + cols - q) : g.ow;
          const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
          if (ih < 0 || ih >= g.h) {
            fill_zero(col, o1 - o0);
          } else {
            gather_row(plane + ih * g.w, g.sw, off, lo, hi, o0, o1, col);
          }
          col += o1 - o0;
          q += o1 - o0;
        }
      }
    }
  }
}

// One channel: out[oh, ow] += w * in[oh * sh - ph + ki * dh, ow * sw + off]
// over the rows and columns where the tap lands inside the input.
void depthwise_tap(const ConvGeometry& g, const float* x, int64_t ki, int64_t kj, float wv,
                   float* out) {
  const int64_t off = kj * g.dw - g.pw;
  int64_t lo, hi;
  conv_tap_range(off, g.sw, g.w, g.ow, &lo, &hi);
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const int64_t ih = oh * g.sh - g.ph + ki * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    const float* irow = x + ih * g.w;
    float* orow = out + oh * g.ow;
    if (g.sw == 1) {  // unit stride: this loop vectorizes
      for (int64_t o = lo; o < hi; ++o) orow[o] += wv * irow[o + off];
    } else {
      for (int64_t o = lo; o < hi; ++o) orow[o] += wv * irow[o * g.sw + off];
    }
  }
}

void conv_depthwise_plane(const ConvGeometry& g, const float* x, const float* taps, float bias,
                          float* y) {
  const int64_t plane_out = int64_t(g.oh) * g.ow;
  for (int64_t q = 0; q < plane_out; ++q) y[q] = bias;
  // tap-major: the tap's column range is computed once per plane, not per row
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    for (int64_t kj = 0; kj < g.kw; ++kj) depthwise_tap(g, x, ki, kj, taps[ki * g.kw + kj], y);
  }
}

}  // namespace portable
}  // namespace tern
