// aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode,
//     int padding_mode, bool align_corners) -> Tensor
// args: [input, grid, interpolation_mode, padding_mode, align_corners, out]
//
// F.grid_sample on 4-d input. input [n, c, h, w], grid [n, oh, ow, 2]
// (x, y in [-1, 1]) -> out [n, c, oh, ow]; input and grid of one dtype:
// float32, float64, float16 or bfloat16, as ATen's CPU kernel. Modes:
// interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
// 2 reflection.
//
// float16 / bfloat16 compute as ATen's CPU kernel does for them: in the
// 16-bit type, rounding after every operation (Rounded<H> below), not in
// float32 with one rounding as the other ops here (util/half.h). The sampling
// coordinates are what differ: a float32 computation picks other pixels or
// weights, by up to the input's scale.
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
#include "kernels/portable/util/half.h"

namespace tern {
namespace portable {
namespace {

enum Interp { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

struct GridState {
  int32_t interpolation, padding, align_corners;
};

// A float32 value that is rounded to the 16-bit type H after every
// operation, as c10::Half and c10::BFloat16 arithmetic is: the compute type
// of the two 16-bit dtypes. Values read from the tensors are exact.
template <typename H>
struct Rounded {
  float v;
  Rounded() = default;
  Rounded(float f) : v(static_cast<float>(H(f))) {}  // NOLINT: implicit, so 1 - t works
  explicit operator float() const { return v; }
  friend Rounded operator+(Rounded a, Rounded b) { return Rounded(a.v + b.v); }
  friend Rounded operator-(Rounded a, Rounded b) { return Rounded(a.v - b.v); }
  friend Rounded operator*(Rounded a, Rounded b) { return Rounded(a.v * b.v); }
  friend Rounded operator/(Rounded a, Rounded b) { return Rounded(a.v / b.v); }
  friend bool operator<(Rounded a, Rounded b) { return a.v < b.v; }
  friend bool operator>(Rounded a, Rounded b) { return a.v > b.v; }
};

// The math the sampler needs, for float, double and Rounded<H> (whose
// results are integers or exact, so need no rounding).
template <typename T> T floor_of(T v) { return std::floor(v); }
template <typename T> T trunc_of(T v) { return std::trunc(v); }
template <typename T> T abs_of(T v) { return std::fabs(v); }
template <typename T> T round_even(T v) { return std::nearbyint(v); }
template <typename T> bool is_nan(T v) { return std::isnan(v); }
template <typename T> int64_t to_int(T v) { return static_cast<int64_t>(v); }
template <typename H> Rounded<H> floor_of(Rounded<H> r) { return std::floor(r.v); }
template <typename H> Rounded<H> trunc_of(Rounded<H> r) { return std::trunc(r.v); }
template <typename H> Rounded<H> abs_of(Rounded<H> r) { return std::fabs(r.v); }
template <typename H> Rounded<H> round_even(Rounded<H> r) { return std::nearbyint(r.v); }
template <typename H> bool is_nan(Rounded<H> r) { return std::isnan(r.v); }
template <typename H> int64_t to_int(Rounded<H> r) { return static_cast<int64_t>(r.v); }

// The type the sampler computes in for elements of type S.
template <typename S> struct ComputeOf { using type = S; };
template <> struct ComputeOf<Half> { using type = Rounded<Half>; };
template <> struct ComputeOf<BFloat16> { using type = Rounded<BFloat16>; };

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
    const T a = abs_of(v - low);
    const T extra = a - trunc_of(a / twice_span) * twice_span;
    const T flipped = twice_span - extra;
    return (extra < flipped || is_nan(extra) ? extra : flipped) + low;
  }
  // The padding mode applied to an unnormalized coordinate.
  T compute(T v) const {
    return padding == kBorder ? clip(v) : padding == kReflection ? clip(reflect(v)) : v;
  }
  // The index of an integer-valued coordinate, or -1 outside the input.
  int64_t index(T v) const {
    return v > T(-1) && v < static_cast<T>(size) ? to_int(v) : -1;
  }
};

// Element (ix, iy) of plane x (stored as S), in compute type T.
template <typename T, typename S>
T tap(const S* x, int64_t w, int64_t ix, int64_t iy) {
  return ix >= 0 && iy >= 0 ? T(x[iy * w + ix]) : T(0);
}

template <typename S, typename T>
S store(T v) {
  return S(static_cast<float>(v));
}
template <> double store<double, double>(double v) { return v; }

// out[k * stride] for the c channel planes x [c, h, w], one sample point.
template <typename S, typename T = typename ComputeOf<S>::type>
void bilinear(const Axis<T>& ax, const Axis<T>& ay, T gx, T gy, const S* x, int64_t c,
              int64_t plane, S* out, int64_t stride) {
  const T px = ax.compute(ax.unnormalize(gx)), py = ay.compute(ay.unnormalize(gy));
  const T fx = floor_of(px), fy = floor_of(py);
  const T tx = px - fx, ty = py - fy;
  const T nw = (1 - ty) * (1 - tx), ne = (1 - ty) * tx, sw = ty * (1 - tx), se = ty * tx;
  const int64_t x0 = ax.index(fx), x1 = ax.index(fx + 1), y0 = ay.index(fy), y1 = ay.index(fy + 1);
  for (int64_t k = 0; k < c; ++k, x += plane) {
    out[k * stride] = store<S>(tap<T>(x, ax.size, x0, y0) * nw + tap<T>(x, ax.size, x1, y0) * ne +
                               tap<T>(x, ax.size, x0, y1) * sw + tap<T>(x, ax.size, x1, y1) * se);
  }
}

template <typename S, typename T = typename ComputeOf<S>::type>
void nearest(const Axis<T>& ax, const Axis<T>& ay, T gx, T gy, const S* x, int64_t c,
             int64_t plane, S* out, int64_t stride) {
  const int64_t ix = ax.index(round_even(ax.compute(ax.unnormalize(gx))));
  const int64_t iy = ay.index(round_even(ay.compute(ay.unnormalize(gy))));
  for (int64_t k = 0; k < c; ++k, x += plane) out[k * stride] = store<S>(tap<T>(x, ax.size, ix, iy));
}

// Cubic convolution weights of the taps at -1, 0, 1, 2 from floor(x), t = x - floor(x).
template <typename T>
void cubic_weights(T t, T* w) {
  const T A = T(-0.75);
  auto outer = [A](T v) { return ((A * v - T(5) * A) * v + T(8) * A) * v - T(4) * A; };  // 1 < v < 2
  auto inner = [A](T v) { return ((A + T(2)) * v - (A + T(3))) * v * v + T(1); };        // v <= 1
  w[0] = outer(t + T(1)), w[1] = inner(t), w[2] = inner(T(1) - t), w[3] = outer(T(2) - t);
}

template <typename S, typename T = typename ComputeOf<S>::type>
void bicubic(const Axis<T>& ax, const Axis<T>& ay, T gx, T gy, const S* x, int64_t c,
             int64_t plane, S* out, int64_t stride) {
  const T px = ax.unnormalize(gx), py = ay.unnormalize(gy);
  const T fx = floor_of(px), fy = floor_of(py);
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
      rows[j] = wx[0] * tap<T>(x, ax.size, ix[0], iy[j]) + wx[1] * tap<T>(x, ax.size, ix[1], iy[j]) +
                wx[2] * tap<T>(x, ax.size, ix[2], iy[j]) + wx[3] * tap<T>(x, ax.size, ix[3], iy[j]);
    }
    out[k * stride] = store<S>(wy[0] * rows[0] + wy[1] * rows[1] + wy[2] * rows[2] + wy[3] * rows[3]);
  }
}

template <typename S>
Error grid_sampler_2d_run(RunContext& ctx, EValue* const* args) {
  using T = typename ComputeOf<S>::type;
  GridState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& input = args[0]->tensor;
  const int64_t c = input.sizes[1], h = input.sizes[2], w = input.sizes[3];
  const Tensor& out = args[5]->tensor;
  const int64_t points = out.sizes[2] * out.sizes[3];  // per image
  const Axis<T> ax(w, st.align_corners != 0, st.padding), ay(h, st.align_corners != 0, st.padding);
  auto* sample = st.interpolation == kBilinear ? bilinear<S>
                 : st.interpolation == kNearest ? nearest<S> : bicubic<S>;
  const S* in = input.data_as<const S>();
  const S* grid = args[1]->tensor.data_as<const S>();
  S* dst = out.data_as<S>();
  ctx.parallel_for(input.sizes[0] * points, 64, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / points, p = i % points;
      sample(ax, ay, T(grid[2 * i]), T(grid[2 * i + 1]), in + n * c * h * w, c, h * w,
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
    case ScalarType::Float16: ctx.set_run(grid_sampler_2d_run<Half>); break;
    case ScalarType::BFloat16: ctx.set_run(grid_sampler_2d_run<BFloat16>); break;
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
  memcpy(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
