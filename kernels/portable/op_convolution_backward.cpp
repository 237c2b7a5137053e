// aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight,
//     SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation,
//     bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask)
//     -> (Tensor, Tensor, Tensor)
// args: [grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
//        output_padding, groups, output_mask, grad_input, grad_weight, grad_bias]
//
// The gradients of aten::convolution: 1-d, 2-d and 3-d (input [n, c, *]),
// any stride, padding, dilation and groups, plain or transposed. float32
// and float64, accumulated in the same type; float16 / bfloat16 staged
// through float32 (half_stage.h). Direct loops, no GEMM: a reference.
//
// Both kinds of convolution pair a "coarse" grid S with a "fine" grid F
// through the weight taps k, per spatial dim:
//   F = S * stride + k * dilation - padding   (taps with F outside are zeros)
// A plain convolution reads the input at F to write the output at S, so
// coarse = grad_output, fine = input, weight [oc, c / groups, k...]. A
// transposed one writes the output at F from the input at S, so coarse =
// input, fine = grad_output, weight [c, oc / groups, k...]. In both the
// weight is [A, B, k...] with A the coarse channels and B the fine channels
// of one group, and
//   grad_weight[a, b, k] = sum over n, S of coarse[n, a, S] * fine[n, fc, F]
// (fc = the group of a * B + b); grad_input is on the fine side for a plain
// convolution (a sum over the coarse positions whose taps land on F) and on
// the coarse side for a transposed one (a sum over the taps of S);
// grad_bias[oc] sums grad_output over n and its positions. Each is computed
// when output_mask asks for it. Every result is a sum owned by one thread
// (threads split planes or weight rows), so it does not depend on the
// thread count.
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/conv.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

// What prepare keeps (the rest comes from the tensors' sizes at run). A 1-d
// or 2-d convolution is run as 3-d with leading spatial dims of size 1.
struct ConvBackward {
  int32_t stride[3], pad[3], dil[3];  // per spatial dim, leading dims padded (1, 0, 1)
  int32_t groups;
  uint8_t transposed;
  bool want[3];  // grad_input, grad_weight, grad_bias
};
static_assert(sizeof(ConvBackward) <= PrepareContext::kStateBytes, "ConvBackward must fit in state");

// The pairing of the coarse and fine grids, as 3-d.
struct Grids {
  int64_t n, groups;
  int64_t a, b;  // weight [a, b, k...]; fine channels = groups * b
  int64_t coarse[3], fine[3], k[3], s[3], p[3], d[3];
  int64_t coarse_plane, fine_plane, taps;
};

// Spatial sizes of t as 3-d (leading 1s).
void spatial3(const Tensor& t, int64_t* out) {
  const int nd = t.dim - 2;
  for (int i = 0; i < 3; ++i) out[i] = i < 3 - nd ? 1 : t.sizes[2 + i - (3 - nd)];
}

Grids grids_of(const ConvBackward& st, const Tensor& grad_output, const Tensor& input, const Tensor& weight) {
  const Tensor& coarse = st.transposed ? input : grad_output;
  const Tensor& fine = st.transposed ? grad_output : input;
  Grids g;
  g.n = input.sizes[0];
  g.groups = st.groups;
  g.a = weight.sizes[0];
  g.b = weight.sizes[1];
  spatial3(coarse, g.coarse);
  spatial3(fine, g.fine);
  spatial3(weight, g.k);
  for (int i = 0; i < 3; ++i) g.s[i] = st.stride[i], g.p[i] = st.pad[i], g.d[i] = st.dil[i];
  g.coarse_plane = g.coarse[0] * g.coarse[1] * g.coarse[2];
  g.fine_plane = g.fine[0] * g.fine[1] * g.fine[2];
  g.taps = g.k[0] * g.k[1] * g.k[2];
  return g;
}

// Calls fn(S, F), flat indices in a coarse and a fine plane, for every coarse
// position whose tap `t` (flat in the kernel window) lands inside the fine grid.
template <typename Fn>
void for_each_tap(const Grids& g, int64_t t, const Fn& fn) {
  const int64_t k[3] = {t / (g.k[1] * g.k[2]), t / g.k[2] % g.k[1], t % g.k[2]};
  int64_t lo[3], hi[3], off[3];
  for (int i = 0; i < 3; ++i) {
    off[i] = k[i] * g.d[i] - g.p[i];
    conv_tap_range(off[i], g.s[i], g.fine[i], g.coarse[i], &lo[i], &hi[i]);
  }
  for (int64_t s0 = lo[0]; s0 < hi[0]; ++s0) {
    const int64_t f0 = s0 * g.s[0] + off[0];
    for (int64_t s1 = lo[1]; s1 < hi[1]; ++s1) {
      const int64_t f1 = s1 * g.s[1] + off[1];
      const int64_t srow = (s0 * g.coarse[1] + s1) * g.coarse[2], frow = (f0 * g.fine[1] + f1) * g.fine[2];
      for (int64_t s2 = lo[2]; s2 < hi[2]; ++s2) fn(srow + s2, frow + s2 * g.s[2] + off[2]);
    }
  }
}

// Multiply-adds a thread should get at least.
constexpr int64_t kMinFlopsPerThread = 1 << 16;

int64_t grain(int64_t flops_per_item) { return kMinFlopsPerThread / (flops_per_item + 1) + 1; }

// grad_weight [a, b, k...]: threads split the (a, b) rows.
template <typename T>
void weight_grad(RunContext& ctx, const Grids& g, const T* coarse, const T* fine, T* gw) {
  const int64_t ag = g.a / g.groups, fine_c = g.groups * g.b;
  ctx.parallel_for(g.a * g.b, grain(g.n * g.taps * g.coarse_plane), [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t ab = begin; ab < end; ++ab) {
      const int64_t a = ab / g.b, fc = a / ag * g.b + ab % g.b;
      for (int64_t t = 0; t < g.taps; ++t) {
        T acc = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          const T* cp = coarse + (n * g.a + a) * g.coarse_plane;
          const T* fp = fine + (n * fine_c + fc) * g.fine_plane;
          for_each_tap(g, t, [&](int64_t s, int64_t f) { acc += cp[s] * fp[f]; });
        }
        gw[ab * g.taps + t] = acc;
      }
    }
  });
}

// grad_input of a plain convolution, on the fine side: threads split the
// (n, fine channel) planes; each sums what its group's coarse channels send.
template <typename T>
void fine_grad(RunContext& ctx, const Grids& g, const T* coarse, const T* w, T* gx) {
  const int64_t ag = g.a / g.groups, fine_c = g.groups * g.b;
  ctx.parallel_for(g.n * fine_c, grain(ag * g.taps * g.coarse_plane), [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / fine_c, fc = p % fine_c, grp = fc / g.b, b = fc % g.b;
      T* out = gx + p * g.fine_plane;
      for (int64_t i = 0; i < g.fine_plane; ++i) out[i] = 0;
      for (int64_t a = grp * ag; a < (grp + 1) * ag; ++a) {
        const T* cp = coarse + (n * g.a + a) * g.coarse_plane;
        const T* wk = w + (a * g.b + b) * g.taps;
        for (int64_t t = 0; t < g.taps; ++t) {
          for_each_tap(g, t, [&](int64_t s, int64_t f) { out[f] += cp[s] * wk[t]; });
        }
      }
    }
  });
}

// grad_input of a transposed convolution, on the coarse side: threads split
// the (n, coarse channel) planes; each gathers over its group's fine channels.
template <typename T>
void coarse_grad(RunContext& ctx, const Grids& g, const T* fine, const T* w, T* gx) {
  const int64_t ag = g.a / g.groups, fine_c = g.groups * g.b;
  ctx.parallel_for(g.n * g.a, grain(g.b * g.taps * g.coarse_plane), [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / g.a, a = p % g.a, grp = a / ag;
      T* out = gx + p * g.coarse_plane;
      for (int64_t i = 0; i < g.coarse_plane; ++i) out[i] = 0;
      for (int64_t b = 0; b < g.b; ++b) {
        const T* fp = fine + (n * fine_c + grp * g.b + b) * g.fine_plane;
        const T* wk = w + (a * g.b + b) * g.taps;
        for (int64_t t = 0; t < g.taps; ++t) {
          for_each_tap(g, t, [&](int64_t s, int64_t f) { out[s] += fp[f] * wk[t]; });
        }
      }
    }
  });
}

// grad_bias [oc]: grad_output [n, oc, plane] summed over n and the plane.
template <typename T>
void bias_grad(RunContext& ctx, const T* gy, int64_t n, int64_t oc, int64_t plane, T* gb) {
  ctx.parallel_for(oc, grain(n * plane), [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      T acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* p = gy + (i * oc + c) * plane;
        for (int64_t j = 0; j < plane; ++j) acc += p[j];
      }
      gb[c] = acc;
    }
  });
}

template <typename T>
Error run(RunContext& ctx, EValue* const* args) {
  ConvBackward st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& gy = args[0]->tensor;
  const Grids g = grids_of(st, gy, args[1]->tensor, args[2]->tensor);
  const T* dy = gy.data_as<const T>();
  const T* x = args[1]->tensor.data_as<const T>();
  const T* w = args[2]->tensor.data_as<const T>();
  const T* coarse = st.transposed ? x : dy;
  const T* fine = st.transposed ? dy : x;
  if (st.want[0]) {
    T* gx = args[11]->tensor.data_as<T>();
    if (st.transposed) {
      coarse_grad(ctx, g, fine, w, gx);
    } else {
      fine_grad(ctx, g, coarse, w, gx);
    }
  }
  if (st.want[1]) weight_grad(ctx, g, coarse, fine, args[12]->tensor.data_as<T>());
  if (st.want[2]) {
    const int64_t oc = st.transposed ? g.groups * g.b : g.a;
    bias_grad(ctx, dy, g.n, oc, st.transposed ? g.fine_plane : g.coarse_plane, args[13]->tensor.data_as<T>());
  }
  return Error::Ok;
}

Error check_args(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 14));
  for (int i : {0, 1, 2}) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  if (!args[3]->is_none() && args[3]->tag != Tag::IntList) {
    return ctx.fail(Error::InvalidProgram, "bias_sizes must be an int list or None, got %s", tag_name(args[3]->tag));
  }
  TERN_CHECK_OK(ctx.expect_tag(args, 7, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 9, Tag::Int));
  const ScalarType t = args[0]->tensor.dtype;
  if (t != ScalarType::Float32 && t != ScalarType::Float64) return fail_dtype(ctx, "grad_output", t);
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "input", t));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "weight", t));
  const Tensor& x = args[1]->tensor;
  if (x.dim < 3 || x.dim > 5 || args[0]->tensor.dim != x.dim || args[2]->tensor.dim != x.dim) {
    return ctx.fail(Error::InvalidProgram,
                    "1-d to 3-d convolution takes batched tensors of 3 to 5 dims: grad_output %d-d, input %d-d, "
                    "weight %d-d", args[0]->tensor.dim, x.dim, args[2]->tensor.dim);
  }
  return Error::Ok;
}

// stride, padding, dilation (and output_padding, for the size check) per
// spatial dim, as 3-d: leading dims (1, 0, 1, 0).
Error read_window(PrepareContext& ctx, Span<EValue* const> args, int64_t (*win)[3]) {
  const int nd = args[1]->tensor.dim - 2;
  const char* names[] = {"stride", "padding", "dilation", "output_padding"};
  const int index[] = {4, 5, 6, 8};
  for (int i = 0; i < 4; ++i) {
    int64_t v[3];
    TERN_CHECK_OK(read_int_list(ctx, *args[index[i]], names[i], nd, i == 3, v));
    const int64_t lo = i == 1 || i == 3 ? 0 : 1;
    for (int j = 0; j < 3; ++j) {
      win[i][j] = j < 3 - nd ? lo : v[j - (3 - nd)];
      if (win[i][j] < lo || win[i][j] > INT32_MAX) {
        return ctx.fail(Error::InvalidProgram, "%s[%d] = %lld is out of range", names[i], j - (3 - nd),
                        (long long)win[i][j]);
      }
    }
  }
  return Error::Ok;
}

// The channels and spatial sizes must pair up as the forward op made them.
Error check_grids(PrepareContext& ctx, const Grids& g, const Tensor& gy, const Tensor& x, const int64_t* out_pad,
                  bool transposed) {
  const Tensor& coarse = transposed ? x : gy;
  const Tensor& fine = transposed ? gy : x;
  if (gy.sizes[0] != x.sizes[0] || coarse.sizes[1] != g.a ||
      g.a % g.groups != 0 || fine.sizes[1] != g.groups * g.b) {
    return ctx.fail(Error::InvalidProgram,
                    "grad_output [%lld, %lld, ...], input [%lld, %lld, ...], weight [%lld, %lld, ...] and groups "
                    "%lld do not fit a%s convolution", (long long)gy.sizes[0], (long long)gy.sizes[1],
                    (long long)x.sizes[0], (long long)x.sizes[1], (long long)g.a, (long long)g.b,
                    (long long)g.groups, transposed ? " transposed" : "");
  }
  const int lead = 3 - (x.dim - 2);  // the padded dims
  for (int i = 0; i < 3; ++i) {
    if (g.k[i] < 1) return ctx.fail(Error::InvalidProgram, "weight has an empty kernel dim");
    if (g.k[i] > INT32_MAX || g.coarse[i] > INT32_MAX || g.fine[i] > INT32_MAX) {
      return ctx.fail(Error::InvalidProgram, "spatial dim %d: a size exceeds int32", i - lead);
    }
    const int64_t span = g.d[i] * (g.k[i] - 1) - 2 * g.p[i];  // fine = (coarse - 1) * s + span + 1 (+ rest)
    const int64_t expect = transposed ? (g.coarse[i] - 1) * g.s[i] + span + 1 + out_pad[i]
                                      : conv_output_size(g.fine[i], g.k[i], g.s[i], g.p[i], g.d[i]);
    const int64_t have = transposed ? g.fine[i] : g.coarse[i];
    if (have != expect) {
      return ctx.fail(Error::InvalidProgram, "spatial dim %d: grad_output has %lld positions, the %sconvolution of "
                      "input %lld gives %lld", i - lead, (long long)gy.sizes[gy.dim - 3 + i], transposed ? "transposed " : "",
                      (long long)x.sizes[x.dim - 3 + i], (long long)expect);
    }
  }
  return Error::Ok;
}

}  // namespace

static Error convolution_backward_prepare_typed(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_args(ctx, args));
  const Tensor& gy = args[0]->tensor;
  const Tensor& x = args[1]->tensor;
  const Tensor& w = args[2]->tensor;
  int64_t win[4][3];
  TERN_CHECK_OK(read_window(ctx, args, win));
  ConvBackward st{};
  for (int j = 0; j < 3; ++j) st.stride[j] = int32_t(win[0][j]), st.pad[j] = int32_t(win[1][j]),
                              st.dil[j] = int32_t(win[2][j]);
  if (args[9]->i < 1 || args[9]->i > INT32_MAX) {
    return ctx.fail(Error::InvalidProgram, "groups must be positive, got %lld", (long long)args[9]->i);
  }
  st.groups = int32_t(args[9]->i);
  st.transposed = args[7]->b ? 1 : 0;
  TERN_CHECK_OK(read_output_mask(ctx, *args[10], st.want));
  const Grids g = grids_of(st, gy, x, w);
  TERN_CHECK_OK(check_grids(ctx, g, gy, x, win[3], st.transposed));
  const int64_t oc = gy.sizes[1];
  const Tensor* like[] = {&x, &w};
  const char* names[] = {"grad_input", "grad_weight", "grad_bias"};
  for (int i = 0; i < 3; ++i) {
    if (!st.want[i]) continue;
    TERN_CHECK_OK(ctx.expect_tensor(args, 11 + i));
    const Tensor& out = args[11 + i]->tensor;
    TERN_CHECK_OK(expect_dtype(ctx, out, names[i], gy.dtype));
    TERN_CHECK_OK(i < 2 ? expect_sizes(ctx, out, names[i], like[i]->sizes, like[i]->dim)
                        : expect_sizes(ctx, out, names[i], &oc, 1));
  }
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(gy.dtype == ScalarType::Float32 ? run<float> : run<double>);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error convolution_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, convolution_backward_prepare_typed, 3);
}

}  // namespace portable
}  // namespace tern
