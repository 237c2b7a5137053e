// aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//     SymInt[] padding, SymInt[] dilation, bool transposed,
//     SymInt[] output_padding, SymInt groups) -> Tensor
// args: [input, weight, bias, stride, padding, dilation, transposed,
//        output_padding, groups, out]
//
// float32 (float16 / bfloat16 staged through it), 2-d (input [n, c, h, w])
// or 1-d (input [n, c, l], run as h = 1), not transposed, any groups, stride,
// padding, dilation. Paths (see util/conv.h): depthwise direct loop; 1x1
// stride-1 unpadded GEMM straight on the input; otherwise im2col chunks + GEMM.
//
// Everything else PyTorch's CPU kernel takes: float64 and int64 (int64
// wrapping modulo 2^64), and float32 transposed or 3-d; 1-d to 3-d,
// transposed or not, any groups, stride, padding, dilation, output_padding: a
// direct loop nest (util/conv_direct.h), slower than the GEMM paths.
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/conv.h"
#include "kernels/portable/util/conv_direct.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

size_t align64(size_t bytes) { return (bytes + 63) & ~size_t(63); }

ConvGeometry load_geometry(const RunContext& ctx) {
  ConvGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  return g;
}

const float* bias_data(const EValue* bias) {
  return bias->is_tensor() ? bias->tensor.data_as<const float>() : nullptr;
}

bool conv_is_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

bool conv_is_depthwise(const ConvGeometry& g) { return g.groups == g.c && g.oc == g.c; }

// Multiply-adds a thread should get at least (smaller work stays on one).
constexpr int64_t kMinFlopsPerThread = 1 << 16;
// Pixels are split between threads in whole GEMM column tiles.
constexpr int64_t kPixelTile = 8;

Error conv_depthwise_run(RunContext& ctx, EValue* const* args) {
  const ConvGeometry g = load_geometry(ctx);
  const float* in = args[0]->tensor.data_as<const float>();
  const float* w = args[1]->tensor.data_as<const float>();
  const float* bias = bias_data(args[2]);
  float* out = args[9]->tensor.data_as<float>();
  const int64_t plane_in = int64_t(g.h) * g.w, plane_out = int64_t(g.oh) * g.ow;
  const int64_t taps = int64_t(g.kh) * g.kw;
  ctx.parallel_for(int64_t(g.n) * g.c, grain_for(kMinFlopsPerThread, {plane_out, taps}), [&](RunContext&, int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {  // plane p: image p / c, channel p % c
      const int64_t ch = p % g.c;
      conv_depthwise_plane(g, in + p * plane_in, w + ch * taps, bias ? bias[ch] : 0.f,
                           out + p * plane_out);
    }
  });
  return Error::Ok;
}

size_t conv_col_bytes(const ConvGeometry& g) {
  if (conv_is_pointwise(g)) return 0;
  return align64(sizeof(float) * size_t(g.c / g.groups) * g.kh * g.kw * conv_im2col_cols(g));
}

// Output pixels [q0, q1) of one image and group (ig = image * groups +
// group): out_g[ocg, q] = bias + w_g[ocg, k] x col[k, q], col built a chunk
// at a time in `col`. Always the blocked GEMM, so that a pixel's value does
// not depend on how the pixels were split.
void conv_pixels(const ConvGeometry& g, EValue* const* args, int64_t ig, int64_t q0, int64_t q1,
                 float* col, void* gemm_scratch) {
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, k = cg * g.kh * g.kw;
  const int64_t pixels = int64_t(g.oh) * g.ow, grp = ig % g.groups, n = ig / g.groups;
  const float* x = args[0]->tensor.data_as<const float>() + (n * g.c + grp * cg) * int64_t(g.h) * g.w;
  const float* w = args[1]->tensor.data_as<const float>() + grp * ocg * k;
  const float* bias = bias_data(args[2]);
  float* y = args[9]->tensor.data_as<float>() + (n * g.oc + grp * ocg) * pixels;
  if (bias) {
    for (int64_t o = 0; o < ocg; ++o) {
      for (int64_t q = q0; q < q1; ++q) y[o * pixels + q] = bias[grp * ocg + o];
    }
  }
  const bool pointwise = conv_is_pointwise(g);
  const int64_t cols = pointwise ? pixels : conv_im2col_cols(g);
  for (int64_t c0 = q0; c0 < q1; c0 += cols) {
    const int64_t cn = cols < q1 - c0 ? cols : q1 - c0;
    GemmParams p;
    p.m = ocg, p.n = cn, p.k = k;
    p.a = w, p.a_rs = k, p.a_cs = 1;
    if (pointwise) {
      p.b = x + c0, p.b_rs = pixels, p.b_cs = 1;  // input [cg, h * w] is the matrix
    } else {
      conv_im2col(g, x, cg, c0, cn, col);
      p.b = col, p.b_rs = cn, p.b_cs = 1;
    }
    p.c = y + c0, p.ldc = pixels;
    p.beta = bias ? 1.f : 0.f;
    gemm_f32_blocked(p, gemm_scratch);
  }
}

// Splits the output pixels of every image and group over the threads.
Error conv_gemm_run(RunContext& ctx, EValue* const* args) {
  const ConvGeometry g = load_geometry(ctx);
  const int64_t pixels = int64_t(g.oh) * g.ow, total = int64_t(g.n) * g.groups * pixels;
  const int64_t tiles = (total + kPixelTile - 1) / kPixelTile;
  const int64_t grain = grain_for(kMinFlopsPerThread, {kPixelTile, g.oc / g.groups, g.c / g.groups, g.kh, g.kw});
  ctx.parallel_for(tiles, grain, [&](RunContext& t, int64_t t0, int64_t t1) {
    float* col = static_cast<float*>(t.scratch());
    void* gemm_scratch = static_cast<char*>(t.scratch()) + conv_col_bytes(g);
    const int64_t end = t1 * kPixelTile < total ? t1 * kPixelTile : total;
    for (int64_t s = t0 * kPixelTile; s < end;) {
      const int64_t ig = s / pixels, q0 = s % pixels;
      const int64_t q1 = q0 + (end - s) < pixels ? q0 + (end - s) : pixels;
      conv_pixels(g, args, ig, q0, q1, col, gemm_scratch);
      s += q1 - q0;
    }
  });
  return Error::Ok;
}

// The argument tags, for every dtype.
Error check_tags(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 10));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tag(args, 6, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 8, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 9));
  if (!args[2]->is_none() && !args[2]->is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "bias must be a tensor or None, got %s",
                    tag_name(args[2]->tag));
  }
  return Error::Ok;
}

// What the float32 GEMM paths take (1-d or 2-d, not transposed: the caller checked).
Error check_args_f32(PrepareContext& ctx, Span<EValue* const> args) {
  const Tensor* tensors[] = {&args[0]->tensor, &args[1]->tensor, &args[9]->tensor,
                             args[2]->is_tensor() ? &args[2]->tensor : nullptr};
  const char* names[] = {"input", "weight", "out", "bias"};
  for (int i = 0; i < 4; ++i) {
    if (tensors[i] && tensors[i]->dtype != ScalarType::Float32) {
      return fail_dtype(ctx, names[i], tensors[i]->dtype);
    }
  }
  const Tensor& x = args[0]->tensor;
  if (args[1]->tensor.dim != x.dim) {
    return ctx.fail(Error::InvalidProgram, "input %d-d and weight %d-d", x.dim, args[1]->tensor.dim);
  }
  return Error::Ok;
}

// stride, padding, dilation as (h, w); a 1-d convolution gets h = (1, 0, 1).
Error read_window(PrepareContext& ctx, Span<EValue* const> args, int64_t (*win)[2]) {
  const int spatial = args[0]->tensor.dim - 2;
  const char* names[] = {"stride", "padding", "dilation"};
  const int64_t h_defaults[] = {1, 0, 1};
  for (int i = 0; i < 3; ++i) {
    int64_t v[2];
    TERN_CHECK_OK(read_int_list(ctx, *args[3 + i], names[i], spatial, false, v));
    win[i][0] = spatial == 2 ? v[0] : h_defaults[i];
    win[i][1] = spatial == 2 ? v[1] : v[0];
    const int64_t lo = i == 1 ? 0 : 1;
    if (win[i][0] < lo || win[i][1] < lo || win[i][0] > INT32_MAX || win[i][1] > INT32_MAX) {
      return ctx.fail(Error::InvalidProgram, "%s (%lld, %lld) out of range", names[i],
                      (long long)win[i][0], (long long)win[i][1]);
    }
  }
  return Error::Ok;
}

// Sizes as [n, c, h, w] (1-d: h = 1); fails if any exceeds int32.
Error sizes_2d(PrepareContext& ctx, const Tensor& t, const char* name, int64_t* s) {
  const bool one_d = t.dim == 3;
  s[0] = t.sizes[0], s[1] = t.sizes[1], s[2] = one_d ? 1 : t.sizes[2], s[3] = t.sizes[t.dim - 1];
  for (int i = 0; i < 4; ++i) {
    if (s[i] > INT32_MAX) {
      return ctx.fail(Error::InvalidProgram, "%s size %lld too large", name, (long long)s[i]);
    }
  }
  return Error::Ok;
}

Error build_geometry(PrepareContext& ctx, Span<EValue* const> args, ConvGeometry* g) {
  int64_t win[3][2], xs[4], ws[4];
  TERN_CHECK_OK(read_window(ctx, args, win));
  TERN_CHECK_OK(sizes_2d(ctx, args[0]->tensor, "input", xs));
  TERN_CHECK_OK(sizes_2d(ctx, args[1]->tensor, "weight", ws));
  const int64_t groups = args[8]->i;
  if (groups < 1 || groups > INT32_MAX || xs[1] % groups != 0 || ws[0] % groups != 0 ||
      ws[1] * groups != xs[1]) {
    return ctx.fail(Error::InvalidProgram,
                    "groups %lld does not fit input channels %lld, weight [%lld, %lld, ...]",
                    (long long)groups, (long long)xs[1], (long long)ws[0], (long long)ws[1]);
  }
  if (ws[2] < 1 || ws[3] < 1) return ctx.fail(Error::InvalidProgram, "empty kernel");
  if (ws[0] < 1 || xs[1] < 1) {  // PyTorch refuses the first, gives a 0-channel output for the second
    return ctx.fail(Error::InvalidProgram, "weight [%lld, %lld, ...] over %lld input channels: no channels",
                    (long long)ws[0], (long long)ws[1], (long long)xs[1]);
  }
  const int64_t oh = conv_output_size(xs[2], ws[2], win[0][0], win[1][0], win[2][0]);
  const int64_t ow = conv_output_size(xs[3], ws[3], win[0][1], win[1][1], win[2][1]);
  if (oh < 1 || ow < 1) {
    return ctx.fail(Error::InvalidProgram, "kernel larger than the padded input");
  }
  *g = ConvGeometry{int32_t(xs[0]), int32_t(xs[1]), int32_t(xs[2]), int32_t(xs[3]),
                    int32_t(ws[0]), int32_t(oh), int32_t(ow), int32_t(ws[2]), int32_t(ws[3]),
                    int32_t(win[0][0]), int32_t(win[0][1]), int32_t(win[1][0]), int32_t(win[1][1]),
                    int32_t(win[2][0]), int32_t(win[2][1]), int32_t(groups)};
  return Error::Ok;
}

}  // namespace

static Error convolution_prepare_unstaged(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_tags(ctx, args));
  const ScalarType t = args[0]->tensor.dtype;
  const int dim = args[0]->tensor.dim;
  const bool gemm_path = t == ScalarType::Float32 && !args[6]->b && (dim == 3 || dim == 4);
  if (t == ScalarType::Float64 || t == ScalarType::Int64 || (t == ScalarType::Float32 && !gemm_path)) {
    return conv_direct_prepare(ctx, args);
  }
  TERN_CHECK_OK(check_args_f32(ctx, args));
  ConvGeometry g;
  TERN_CHECK_OK(build_geometry(ctx, args, &g));
  if (args[2]->is_tensor()) {
    const int64_t bias_sizes[] = {g.oc};
    TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "bias", bias_sizes, 1));
  }
  const int64_t out_2d[] = {g.n, g.oc, g.oh, g.ow}, out_1d[] = {g.n, g.oc, g.ow};
  const bool one_d = args[0]->tensor.dim == 3;
  TERN_CHECK_OK(expect_sizes(ctx, args[9]->tensor, "out", one_d ? out_1d : out_2d, one_d ? 3 : 4));
  memmove(ctx.state(), &g, sizeof(g));
  if (conv_is_depthwise(g)) {
    ctx.set_run(conv_depthwise_run);
    return Error::Ok;
  }
  const int64_t ocg = g.oc / g.groups, k = int64_t(g.c / g.groups) * g.kh * g.kw;
  const int64_t cols = conv_is_pointwise(g) ? int64_t(g.oh) * g.ow : conv_im2col_cols(g);
  ctx.request_scratch(conv_col_bytes(g) + gemm_blocked_scratch_bytes(ocg, cols, k));
  ctx.set_run(conv_gemm_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error convolution_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, convolution_prepare_unstaged, 1);
}

}  // namespace portable
}  // namespace tern
