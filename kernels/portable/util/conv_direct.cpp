#include "kernels/portable/util/conv_direct.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/conv.h"

namespace tern {
namespace portable {
namespace {

// Window per spatial dim, padded to 3 dims at the front (a 1-d convolution
// is [1, 1, l]: stride 1, padding 0, dilation 1 in the two leading dims).
struct ConvDirectState {
  int32_t stride[3], pad[3], dil[3];
  int32_t groups;
  int32_t transposed;
};
static_assert(sizeof(ConvDirectState) <= PrepareContext::kStateBytes,
              "ConvDirectState must fit in state");

// Sizes read from the tensors at run (checked by prepare), padded to 3 dims.
struct ConvDirectShape {
  int64_t n, cg, ocg;  // images, input and output channels per group
  int64_t c, oc;
  int64_t in[3], out[3], k[3];
};

void padded_3(const Tensor& t, int64_t* s) {
  const int lead = 5 - t.dim;
  for (int d = 0; d < 3; ++d) s[d] = d < lead ? 1 : t.sizes[2 + d - lead];
}

ConvDirectShape shape_of(EValue* const* args, const ConvDirectState& st) {
  const Tensor& x = args[0]->tensor;
  const Tensor& y = args[9]->tensor;
  ConvDirectShape z;
  z.n = x.sizes[0], z.c = x.sizes[1], z.oc = y.sizes[1];
  z.cg = z.c / st.groups, z.ocg = z.oc / st.groups;
  padded_3(x, z.in);
  padded_3(y, z.out);
  padded_3(args[1]->tensor, z.k);
  return z;
}

// The input index that tap t of output index y reads along dim d, or -1
// when it falls in the padding (or, transposed, between input positions).
int64_t tap_source(const ConvDirectState& st, const ConvDirectShape& z, int d, int64_t y,
                   int64_t t) {
  if (!st.transposed) {
    const int64_t i = y * st.stride[d] - st.pad[d] + t * st.dil[d];
    return i >= 0 && i < z.in[d] ? i : -1;
  }
  const int64_t num = y + st.pad[d] - t * st.dil[d];  // = i * stride
  if (num < 0 || num % st.stride[d] != 0) return -1;
  const int64_t i = num / st.stride[d];
  return i < z.in[d] ? i : -1;
}

template <typename T>
using ConvAcc = std::conditional_t<std::is_integral<T>::value, uint64_t, T>;

// One output value: the sum over the group's input channels and the taps.
// x: the image's input [c, in...]; w: the weight.
template <typename T>
ConvAcc<T> conv_point(const ConvDirectState& st, const ConvDirectShape& z, const T* x, const T* w,
                      int64_t o, const int64_t* y) {
  using Acc = ConvAcc<T>;
  const int64_t in_vol = z.in[0] * z.in[1] * z.in[2], k_vol = z.k[0] * z.k[1] * z.k[2];
  const int64_t grp = o / z.ocg;
  Acc acc = 0;
  for (int64_t ci = 0; ci < z.cg; ++ci) {
    const int64_t cin = grp * z.cg + ci;
    const T* xc = x + cin * in_vol;
    // weight [oc, cg, k...], transposed [c, ocg, k...]
    const int64_t wi = st.transposed ? cin * z.ocg + o % z.ocg : o * z.cg + ci;
    const T* wc = w + wi * k_vol;
    for (int64_t t0 = 0; t0 < z.k[0]; ++t0) {
      const int64_t i0 = tap_source(st, z, 0, y[0], t0);
      if (i0 < 0) continue;
      for (int64_t t1 = 0; t1 < z.k[1]; ++t1) {
        const int64_t i1 = tap_source(st, z, 1, y[1], t1);
        if (i1 < 0) continue;
        const T* xrow = xc + (i0 * z.in[1] + i1) * z.in[2];
        const T* wrow = wc + (t0 * z.k[1] + t1) * z.k[2];
        for (int64_t t2 = 0; t2 < z.k[2]; ++t2) {
          const int64_t i2 = tap_source(st, z, 2, y[2], t2);
          if (i2 >= 0) acc = acc + static_cast<Acc>(xrow[i2]) * static_cast<Acc>(wrow[t2]);
        }
      }
    }
  }
  return acc;
}

template <typename T>
Error conv_direct_run(RunContext& ctx, EValue* const* args) {
  ConvDirectState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const ConvDirectShape z = shape_of(args, st);
  const T* x = args[0]->tensor.data_as<const T>();
  const T* w = args[1]->tensor.data_as<const T>();
  const T* bias = args[2]->is_tensor() ? args[2]->tensor.data_as<const T>() : nullptr;
  T* out = args[9]->tensor.data_as<T>();
  const int64_t in_image = z.c * z.in[0] * z.in[1] * z.in[2];
  const int64_t plane = z.out[0] * z.out[1] * z.out[2];
  const int64_t work = plane * z.cg * z.k[0] * z.k[1] * z.k[2];
  const int64_t grain = (1 << 16) / (work + 1) + 1;
  ctx.parallel_for(z.n * z.oc, grain, [&](RunContext&, int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {  // plane p: image p / oc, output channel p % oc
      const int64_t o = p % z.oc;
      const ConvAcc<T> b = bias ? static_cast<ConvAcc<T>>(bias[o]) : ConvAcc<T>(0);
      T* y = out + p * plane;
      int64_t q = 0, at[3];
      for (at[0] = 0; at[0] < z.out[0]; ++at[0]) {
        for (at[1] = 0; at[1] < z.out[1]; ++at[1]) {
          for (at[2] = 0; at[2] < z.out[2]; ++at[2]) {
            y[q++] = static_cast<T>(b + conv_point(st, z, x + (p / z.oc) * in_image, w, o, at));
          }
        }
      }
    }
  });
  return Error::Ok;
}

// stride, padding, dilation, output_padding per spatial dim, range-checked.
Error read_windows(PrepareContext& ctx, Span<EValue* const> args, int spatial, int64_t (*win)[3]) {
  const char* names[] = {"stride", "padding", "dilation", "output_padding"};
  const int arg[] = {3, 4, 5, 7};
  for (int i = 0; i < 4; ++i) {
    TERN_CHECK_OK(read_int_list(ctx, *args[arg[i]], names[i], spatial, i == 3, win[i]));
    const int64_t lo = i == 1 || i == 3 ? 0 : 1;
    for (int d = 0; d < spatial; ++d) {
      if (win[i][d] < lo || win[i][d] > INT32_MAX) {
        return ctx.fail(Error::InvalidProgram, "%s %lld out of range", names[i],
                        (long long)win[i][d]);
      }
    }
  }
  return Error::Ok;
}

// groups against the channels; gives the output channels.
Error check_groups(PrepareContext& ctx, const Tensor& x, const Tensor& w, int64_t groups,
                   bool transposed, int64_t* oc) {
  const int64_t c = x.sizes[1];
  const bool ok = groups >= 1 && groups <= INT32_MAX && c % groups == 0 &&
                  (transposed ? w.sizes[0] == c && w.sizes[1] <= INT64_MAX / groups
                              : w.sizes[1] == c / groups && w.sizes[0] % groups == 0);
  if (!ok) {
    return ctx.fail(Error::InvalidProgram,
                    "groups %lld does not fit input channels %lld, weight [%lld, %lld, ...]%s",
                    (long long)groups, (long long)c, (long long)w.sizes[0], (long long)w.sizes[1],
                    transposed ? " (transposed)" : "");
  }
  *oc = transposed ? w.sizes[1] * groups : w.sizes[0];
  return Error::Ok;
}

// The output size along one spatial dim (< 1 when the input is too small).
int64_t output_size(bool transposed, int64_t in, int64_t k, const int64_t (*win)[3], int d) {
  if (!transposed) return conv_output_size(in, k, win[0][d], win[1][d], win[2][d]);
  return (in - 1) * win[0][d] - 2 * win[1][d] + win[2][d] * (k - 1) + win[3][d] + 1;
}

Error check_dtypes(PrepareContext& ctx, Span<EValue* const> args) {
  const ScalarType t = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "weight", t));
  TERN_CHECK_OK(expect_dtype(ctx, args[9]->tensor, "out", t));
  if (args[2]->is_tensor()) TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "bias", t));
  return Error::Ok;
}

}  // namespace

Error conv_direct_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  const Tensor& x = args[0]->tensor;
  const Tensor& w = args[1]->tensor;
  TERN_CHECK_OK(check_dtypes(ctx, args));
  const int spatial = x.dim - 2;
  if (spatial < 1 || spatial > 3 || w.dim != x.dim) {
    return ctx.fail(Error::InvalidProgram, "need 1-d to 3-d convolution: input %d-d, weight %d-d",
                    x.dim, w.dim);
  }
  const bool transposed = args[6]->b;
  int64_t win[4][3], oc;
  TERN_CHECK_OK(read_windows(ctx, args, spatial, win));
  TERN_CHECK_OK(check_groups(ctx, x, w, args[8]->i, transposed, &oc));
  int64_t out_sizes[5] = {x.sizes[0], oc};
  ConvDirectState st{{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, int32_t(args[8]->i), transposed};
  for (int d = 0; d < spatial; ++d) {
    const int64_t in = x.sizes[2 + d], k = w.sizes[2 + d];
    if (transposed && win[3][d] >= win[0][d] && win[3][d] >= win[2][d]) {
      return ctx.fail(Error::InvalidProgram, "output_padding %lld must be smaller than stride or "
                      "dilation", (long long)win[3][d]);
    }
    if (k < 1 || in > INT32_MAX || k > INT32_MAX) {
      return ctx.fail(Error::InvalidProgram, "kernel size %lld, input size %lld out of range",
                      (long long)k, (long long)in);
    }
    out_sizes[2 + d] = output_size(transposed, in, k, win, d);
    if (out_sizes[2 + d] < 1) {
      return ctx.fail(Error::InvalidProgram, "input too small for the kernel");
    }
    const int at = 3 - spatial + d;
    st.stride[at] = int32_t(win[0][d]);
    st.pad[at] = int32_t(win[1][d]);
    st.dil[at] = int32_t(win[2][d]);
  }
  if (args[2]->is_tensor()) TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "bias", &oc, 1));
  TERN_CHECK_OK(expect_sizes(ctx, args[9]->tensor, "out", out_sizes, x.dim));
  memmove(ctx.state(), &st, sizeof(st));
  switch (x.dtype) {
    case ScalarType::Float32: ctx.set_run(conv_direct_run<float>); break;
    case ScalarType::Float64: ctx.set_run(conv_direct_run<double>); break;
    case ScalarType::Int64: ctx.set_run(conv_direct_run<int64_t>); break;
    default: return fail_dtype(ctx, "input", x.dtype);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
