// aten::native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd,
//     Tensor? weight, SymInt N, SymInt C, SymInt HxW, SymInt group, bool[3] output_mask)
//     -> (Tensor, Tensor, Tensor)
// args: [grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask,
//        grad_input, grad_weight, grad_bias]
//
// The gradients of aten::native_group_norm (op_native_group_norm.cpp), from
// the mean and rstd [N, group] it returned. float32 and float64, accumulated
// in the same type; float16 / bfloat16 staged through float32 (half_stage.h).
// input [N, C, *] is N * group rows of C / group * HxW elements. With
// xhat = (x - mean) * rstd of its row and g = grad_out * weight[c]
// (grad_out alone without weight), per row:
//   grad_input  = rstd * (g - mean(g) - xhat * mean(g * xhat))
// and per channel c, summed over the samples and the HxW positions:
//   grad_weight[c] = sum(grad_out * xhat),  grad_bias[c] = sum(grad_out)
// Each is computed when output_mask asks for it; grad_weight and grad_bias
// [C] also without a weight, as ATen does.
#include <cstring>
#include <initializer_list>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct GroupNormBackward {
  int64_t n, c, hxw, group;
  bool want[3];  // grad_input, grad_weight, grad_bias
};

// Elements a thread should get at least.
constexpr int64_t kMinElementsPerThread = 1 << 14;

// One (sample, group) row: `channels` channels of hxw elements, w its
// channels' weights or nullptr.
template <typename T>
void grad_input_row(const T* dy, const T* x, T mean, T rstd, const T* w, int64_t channels, int64_t hxw, T* dx) {
  T sum_g = 0, sum_gx = 0;
  for (int64_t c = 0; c < channels; ++c) {
    const T wc = w ? w[c] : T(1);
    for (int64_t i = c * hxw; i < (c + 1) * hxw; ++i) {
      sum_g += dy[i] * wc;
      sum_gx += dy[i] * wc * (x[i] - mean) * rstd;
    }
  }
  const T count = static_cast<T>(channels * hxw);
  const T mean_g = sum_g / count, mean_gx = sum_gx / count;
  for (int64_t c = 0; c < channels; ++c) {
    const T wc = w ? w[c] : T(1);
    for (int64_t i = c * hxw; i < (c + 1) * hxw; ++i) {
      dx[i] = rstd * (dy[i] * wc - mean_g - (x[i] - mean) * rstd * mean_gx);
    }
  }
}

template <typename T>
Error run(RunContext& ctx, EValue* const* args) {
  GroupNormBackward st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* dy = args[0]->tensor.data_as<const T>();
  const T* x = args[1]->tensor.data_as<const T>();
  const T* mean = args[2]->tensor.data_as<const T>();
  const T* rstd = args[3]->tensor.data_as<const T>();
  const T* w = args[4]->is_tensor() ? args[4]->tensor.data_as<const T>() : nullptr;
  const int64_t channels = st.c / st.group, row = channels * st.hxw;
  if (st.want[0]) {
    T* dx = args[10]->tensor.data_as<T>();
    ctx.parallel_for(st.n * st.group, grain_for(kMinElementsPerThread, {row}), [&](RunContext&, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t c0 = (r % st.group) * channels;
        grad_input_row(dy + r * row, x + r * row, mean[r], rstd[r], w ? w + c0 : nullptr, channels, st.hxw,
                       dx + r * row);
      }
    });
  }
  if (!st.want[1] && !st.want[2]) return Error::Ok;
  T* dw = st.want[1] ? args[11]->tensor.data_as<T>() : nullptr;
  T* db = st.want[2] ? args[12]->tensor.data_as<T>() : nullptr;
  ctx.parallel_for(st.c, grain_for(kMinElementsPerThread, {st.n, st.hxw}), [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      T sum_dy = 0, sum_dyx = 0;
      for (int64_t s = 0; s < st.n; ++s) {
        const int64_t r = s * st.group + c / channels;  // the statistics' row
        const T* dyc = dy + (s * st.c + c) * st.hxw;
        const T* xc = x + (s * st.c + c) * st.hxw;
        for (int64_t i = 0; i < st.hxw; ++i) {
          sum_dy += dyc[i];
          sum_dyx += dyc[i] * (xc[i] - mean[r]) * rstd[r];
        }
      }
      if (dw) dw[c] = sum_dyx;
      if (db) db[c] = sum_dy;
    }
  });
  return Error::Ok;
}

Error check_args(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 13));
  for (int i : {0, 1, 2, 3}) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  for (int i : {5, 6, 7, 8}) TERN_CHECK_OK(ctx.expect_tag(args, i, Tag::Int));
  const ScalarType t = args[0]->tensor.dtype;
  if (t != ScalarType::Float32 && t != ScalarType::Float64) return fail_dtype(ctx, "grad_out", t);
  TERN_CHECK_OK(expect_same_shape(ctx, args[1]->tensor, args[0]->tensor, "input", "grad_out"));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "mean", t));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "rstd", t));
  const EValue& w = *args[4];
  if (w.is_none()) return Error::Ok;
  if (!w.is_tensor()) return ctx.fail(Error::InvalidProgram, "weight must be a tensor or None, got %s", tag_name(w.tag));
  return expect_dtype(ctx, w.tensor, "weight", t);
}

// N, C, HxW, group must describe input [N, C, *] (HxW the product of the rest).
Error check_dims(PrepareContext& ctx, const Tensor& x, const GroupNormBackward& st) {
  int64_t hxw = 1;
  for (int d = 2; d < x.dim; ++d) hxw *= x.sizes[d];
  if (x.dim < 2 || st.n != x.sizes[0] || st.c != x.sizes[1] || st.hxw != hxw) {
    return ctx.fail(Error::InvalidProgram, "N, C, HxW = %lld, %lld, %lld do not describe a %d-d input [N, C, *]",
                    (long long)st.n, (long long)st.c, (long long)st.hxw, x.dim);
  }
  if (st.hxw <= 0 || st.c <= 0) {
    return ctx.fail(Error::InvalidProgram, "C and HxW must be positive, got %lld and %lld", (long long)st.c,
                    (long long)st.hxw);
  }
  if (st.group <= 0 || st.c % st.group != 0) {
    return ctx.fail(Error::InvalidProgram, "group %lld must be positive and divide C = %lld", (long long)st.group,
                    (long long)st.c);
  }
  return Error::Ok;
}

}  // namespace

static Error native_group_norm_backward_prepare_typed(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_args(ctx, args));
  const Tensor& x = args[1]->tensor;
  const ScalarType t = x.dtype;
  GroupNormBackward st{args[5]->i, args[6]->i, args[7]->i, args[8]->i, {}};
  TERN_CHECK_OK(check_dims(ctx, x, st));
  for (int i : {2, 3}) {
    if (args[i]->tensor.numel != st.n * st.group) {
      return ctx.fail(Error::InvalidProgram, "%s has %lld elements, N * group = %lld expected",
                      i == 2 ? "mean" : "rstd", (long long)args[i]->tensor.numel, (long long)(st.n * st.group));
    }
  }
  if (args[4]->is_tensor()) TERN_CHECK_OK(expect_sizes(ctx, args[4]->tensor, "weight", &st.c, 1));
  TERN_CHECK_OK(read_output_mask(ctx, *args[9], st.want));
  const char* names[] = {"grad_input", "grad_weight", "grad_bias"};
  for (int i = 0; i < 3; ++i) {
    if (!st.want[i]) continue;
    TERN_CHECK_OK(ctx.expect_tensor(args, 10 + i));
    TERN_CHECK_OK(expect_dtype(ctx, args[10 + i]->tensor, names[i], t));
    TERN_CHECK_OK(i == 0 ? expect_sizes(ctx, args[10]->tensor, names[0], x.sizes, x.dim)
                         : expect_sizes(ctx, args[10 + i]->tensor, names[i], &st.c, 1));
  }
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(t == ScalarType::Float32 ? run<float> : run<double>);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error native_group_norm_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, native_group_norm_backward_prepare_typed, 3);
}

}  // namespace portable
}  // namespace tern
