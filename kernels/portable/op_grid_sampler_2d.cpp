// aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode,
//     int padding_mode, bool align_corners) -> Tensor
// args: [input, grid, interpolation_mode, padding_mode, align_corners, out]
//
// F.grid_sample on 4-d input. input [n, c, h, w], grid [n, oh, ow, 2]
// (x, y in [-1, 1]) -> out [n, c, oh, ow]; float32 or float64, both the
// same, as ATen's CPU kernel. Modes: interpolation 0 bilinear, 1 nearest,
// 2 bicubic; padding 0 zeros, 1 border, 2 reflection.
//
// Along each axis of size s (ATen's GridSamplerKernel.cpp, ComputeLocation):
//   unnormalize  align_corners: (g + 1) * ((s - 1) / 2)
//                otherwise:     (g + 1) * (s / 2) - 0.5
//   border       clip to [0, s - 1] (NaN -> 0)
//   reflection   reflect about 0 and s - 1 (align_corners) or -0.5 and
//                s - 0.5, then clip
// bilinear reads the 4 neighbours floor(x) + {0, 1} with weights 1 - t, t;
// nearest reads round-half-even(x); bicubic reads floor(x) + {-1, 0, 1, 2}
// with the cubic convolution weights (A = -0.75), each tap's coordinate put
// through the padding mode. A tap outside the input reads 0; every tap's
// value is multiplied by its weight (so a NaN coordinate gives NaN with
// zeros padding, as in ATen).
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

enum Interp { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

struct GridState {
  int32_t interpolation, padding, align_corners;
};

// One input axis: ATen's ComputeLocationBase in the input's type.
template <typename T>
struct Axis {
  int64_t size;
  T scale, max_val, low, twice_span;
  bool align, empty;
  int padding;

  Axis(int64_t s, bool align_corners, int pad)
      : size(s),
        scale(align_corners ? static_cast<T>(s - 1) / 2 : static_cast<T>(s) / 2),
        max_val(static_cast<T>(s - 1)),
        low(align_corners ? T(0) : T(-0.5)),
        twice_span(static_cast<T>(align_corners ? s - 1 : s) * 2),
        align(align_corners),
        empty(align_corners ? s <= 1 : s <= 0),
        padding(pad) {}

  T unnormalize(T g) const { return align ? (g + 1) * scale : (g + 1) * scale - T(0.5); }
  T clip(T v) const {
    v = v > T(0) ? v : T(0);  // NaN -> 0
    return v < max_val ? v : max_val;
  }
  T reflect(T v) const {
    if (empty) return T(0);
    const T a = std::fabs(v - low);
    const T extra = a - std::trunc(a / twice_span) * twice_span;
    const T flipped = twice_span - extra;
    return (extra < flipped || std::isnan(extra) ? extra : flipped) + low;
  }
  // The padding mode applied to an unnormalized coordinate.
  T compute(T v) const {
    return padding == kBorder ? clip(v) : padding == kReflection ? clip(reflect(v)) : v;
  }
  // The index of an integer-valued coordinate, or -1 outside the input.
  int64_t index(T v) const {
    return v > T(-1) && v < static_cast<T>(size) ? static_cast<int64_t>(v) : -1;
  }
};

template <typename T>
T tap(const T* x, int64_t w, int64_t ix, int64_t iy) {
  return ix >= 0 && iy >= 0 ? x[iy * w + ix] : T(0);
}

// out[k * stride] for the c channel planes x [c, h, w], one sample point.
template <typename T>
void bilinear(const Axis<T>& ax, const Axis<T>& ay, T gx, T gy, const T* x, int64_t c,
              int64_t plane, T* out, int64_t stride) {
  const T px = ax.compute(ax.unnormalize(gx)), py = ay.compute(ay.unnormalize(gy));
  const T fx = std::floor(px), fy = std::floor(py);
  const T tx = px - fx, ty = py - fy;
  const T nw = (1 - ty) * (1 - tx), ne = (1 - ty) * tx, sw = ty * (1 - tx), se = ty * tx;
  const int64_t x0 = ax.index(fx), x1 = ax.index(fx + 1), y0 = ay.index(fy), y1 = ay.index(fy + 1);
  for (int64_t k = 0; k < c; ++k, x += plane) {
    out[k * stride] = tap(x, ax.size, x0, y0) * nw + tap(x, ax.size, x1, y0) * ne +
                      tap(x, ax.size, x0, y1) * sw + tap(x, ax.size, x1, y1) * se;
  }
}

template <typename T>
void nearest(const Axis<T>& ax, const Axis<T>& ay, T gx, T gy, const T* x, int64_t c,
             int64_t plane, T* out, int64_t stride) {
  const int64_t ix = ax.index(std::nearbyint(ax.compute(ax.unnormalize(gx))));
  const int64_t iy = ay.index(std::nearbyint(ay.compute(ay.unnormalize(gy))));
  for (int64_t k = 0; k < c; ++k, x += plane) out[k * stride] = tap(x, ax.size, ix, iy);
}

// Cubic convolution weights of the taps at -1, 0, 1, 2 from floor(x), t = x - floor(x).
template <typename T>
void cubic_weights(T t, T* w) {
  const T A = T(-0.75);
  auto outer = [A](T v) { return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A; };  // 1 < v < 2
  auto inner = [A](T v) { return ((A + 2) * v - (A + 3)) * v * v + 1; };        // v <= 1
  w[0] = outer(t + 1), w[1] = inner(t), w[2] = inner(1 - t), w[3] = outer(2 - t);
}

template <typename T>
void bicubic(const Axis<T>& ax, const Axis<T>& ay, T gx, T gy, const T* x, int64_t c,
             int64_t plane, T* out, int64_t stride) {
  const T px = ax.unnormalize(gx), py = ay.unnormalize(gy);
  const T fx = std::floor(px), fy = std::floor(py);
  T wx[4], wy[4];
  cubic_weights(px - fx, wx);
  cubic_weights(py - fy, wy);
  int64_t ix[4], iy[4];
  for (int i = 0; i < 4; ++i) {
    ix[i] = ax.index(ax.compute(fx + T(i - 1)));
    iy[i] = ay.index(ay.compute(fy + T(i - 1)));
  }
  for (int64_t k = 0; k < c; ++k, x += plane) {
    T rows[4];
    for (int j = 0; j < 4; ++j) {
      rows[j] = wx[0] * tap(x, ax.size, ix[0], iy[j]) + wx[1] * tap(x, ax.size, ix[1], iy[j]) +
                wx[2] * tap(x, ax.size, ix[2], iy[j]) + wx[3] * tap(x, ax.size, ix[3], iy[j]);
    }
    out[k * stride] = wy[0] * rows[0] + wy[1] * rows[1] + wy[2] * rows[2] + wy[3] * rows[3];
  }
}

template <typename T>
Error grid_sampler_2d_run(RunContext& ctx, EValue* const* args) {
  GridState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& input = args[0]->tensor;
  const int64_t c = input.sizes[1], h = input.sizes[2], w = input.sizes[3];
  const Tensor& out = args[5]->tensor;
  const int64_t points = out.sizes[2] * out.sizes[3];  // per image
  const Axis<T> ax(w, st.align_corners != 0, st.padding), ay(h, st.align_corners != 0, st.padding);
  auto* sample = st.interpolation == kBilinear ? bilinear<T>
                 : st.interpolation == kNearest ? nearest<T> : bicubic<T>;
  const T* in = input.data_as<const T>();
  const T* grid = args[1]->tensor.data_as<const T>();
  T* dst = out.data_as<T>();
  ctx.parallel_for(input.sizes[0] * points, 64, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / points, p = i % points;
      sample(ax, ay, grid[2 * i], grid[2 * i + 1], in + n * c * h * w, c, h * w,
             dst + n * c * points + p, points);
    }
  });
  return Error::Ok;
}

Error read_mode(PrepareContext& ctx, const EValue& v, const char* name, int32_t* mode) {
  if (!v.is_int() || v.i < 0 || v.i > 2) {
    return ctx.fail(Error::InvalidProgram, "%s must be 0, 1 or 2", name);
  }
  *mode = static_cast<int32_t>(v.i);
  return Error::Ok;
}

}  // namespace

Error grid_sampler_2d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  const Tensor& input = args[0]->tensor;
  const Tensor& grid = args[1]->tensor;
  switch (input.dtype) {
    case ScalarType::Float32: ctx.set_run(grid_sampler_2d_run<float>); break;
    case ScalarType::Float64: ctx.set_run(grid_sampler_2d_run<double>); break;
    default: return fail_dtype(ctx, "input", input.dtype);
  }
  TERN_CHECK_OK(expect_dtype(ctx, grid, "grid", input.dtype));
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "out", input.dtype));
  if (input.dim != 4 || grid.dim != 4 || grid.sizes[3] != 2 || grid.sizes[0] != input.sizes[0]) {
    return ctx.fail(Error::InvalidProgram,
                    "input must be [n, c, h, w] and grid [n, oh, ow, 2] with the same n");
  }
  if (input.sizes[2] == 0 || input.sizes[3] == 0) {
    return ctx.fail(Error::InvalidProgram, "input must have non-empty spatial dims");
  }
  GridState st;
  TERN_CHECK_OK(read_mode(ctx, *args[2], "interpolation_mode", &st.interpolation));
  TERN_CHECK_OK(read_mode(ctx, *args[3], "padding_mode", &st.padding));
  st.align_corners = args[4]->b ? 1 : 0;
  const int64_t out_sizes[4] = {input.sizes[0], input.sizes[1], grid.sizes[1], grid.sizes[2]};
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", out_sizes, 4));
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
