// Batch norm over the batch's own statistics (what nn.InstanceNorm and
// F.batch_norm(training=True) export to):
//
// aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias,
//     Tensor(a!) running_mean, Tensor(b!) running_var, bool training,
//     float momentum, float eps) -> (Tensor, Tensor, Tensor)
//   args: [input, weight, bias, running_mean, running_var, training, momentum, eps,
//          out, save_mean, save_invstd]
// aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight,
//     Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
//   args: [input, weight, bias, training, momentum, eps, out, save_mean, save_invstd]
//
// input [n, c, ...] float32, float64, float16 or bfloat16 (the 16-bit types
// staged through float32), all tensors of its dtype. With training (always for no_stats):
// per channel over n and the inner dims, mean and biased variance, in double;
//   out = (x - mean) * invstd * weight + bias,  invstd = 1 / sqrt(var + eps);
// save_mean [c] = mean, save_invstd [c] = invstd. Without training (the
// first overload only): the running statistics, and save_mean / save_invstd
// are empty ([0]), as in ATen. The running statistics are never written:
// torch.export turns a batch norm that updates them into its functional form,
// which this kernel is not.
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct LegitState {
  int64_t n, c, inner;
  double eps;
  int8_t weight, bias, mean, var, out;  // argument indices (-1: none)
  bool training;
};

template <typename T>
Error legit_run(RunContext& ctx, EValue* const* args) {
  LegitState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* x = args[0]->tensor.data_as<const T>();
  auto opt = [&](int8_t i) { return i >= 0 && args[i]->is_tensor() ? args[i]->tensor.data_as<const T>() : nullptr; };
  const T* weight = opt(st.weight);
  const T* bias = opt(st.bias);
  const T* running_mean = opt(st.mean);
  const T* running_var = opt(st.var);
  T* y = args[st.out]->tensor.data_as<T>();
  T* save_mean = st.training ? args[st.out + 1]->tensor.data_as<T>() : nullptr;
  T* save_invstd = st.training ? args[st.out + 2]->tensor.data_as<T>() : nullptr;
  const double count = static_cast<double>(st.n * st.inner);
  ctx.parallel_for(st.c, 1, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double mean, var;
      if (st.training) {
        double sum = 0;
        for (int64_t n = 0; n < st.n; ++n) {
          const T* p = x + (n * st.c + c) * st.inner;
          for (int64_t i = 0; i < st.inner; ++i) sum += static_cast<double>(p[i]);
        }
        mean = count > 0 ? sum / count : 0.0;
        double sq = 0;
        for (int64_t n = 0; n < st.n; ++n) {
          const T* p = x + (n * st.c + c) * st.inner;
          for (int64_t i = 0; i < st.inner; ++i) {
            const double d = static_cast<double>(p[i]) - mean;
            sq += d * d;
          }
        }
        var = count > 0 ? sq / count : 0.0;
      } else {
        mean = static_cast<double>(running_mean[c]);
        var = static_cast<double>(running_var[c]);
      }
      const double invstd = 1.0 / std::sqrt(var + st.eps);
      if (st.training) {
        save_mean[c] = static_cast<T>(mean);
        save_invstd[c] = static_cast<T>(invstd);
      }
      const double scale = invstd * (weight ? static_cast<double>(weight[c]) : 1.0);
      const double shift = (bias ? static_cast<double>(bias[c]) : 0.0) - mean * scale;
      for (int64_t n = 0; n < st.n; ++n) {
        const int64_t base = (n * st.c + c) * st.inner;
        for (int64_t i = 0; i < st.inner; ++i) y[base + i] = static_cast<T>(static_cast<double>(x[base + i]) * scale + shift);
      }
    }
  });
  return Error::Ok;
}

// A per-channel tensor of x's dtype, [c]; None allowed when `optional`.
Error check_channel(PrepareContext& ctx, const EValue& v, const char* name, const Tensor& x, bool optional) {
  if (optional && v.is_none()) return Error::Ok;
  if (!v.is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "%s must be a tensor%s, got %s", name, optional ? " or None" : "",
                    tag_name(v.tag));
  }
  TERN_CHECK_OK(expect_dtype(ctx, v.tensor, name, x.dtype));
  const int64_t sizes[] = {x.sizes[1]};
  return expect_sizes(ctx, v.tensor, name, sizes, 1);
}

// Shared by both overloads: `stats` is the index of running_mean (-1 for
// no_stats), `flag` that of training, `out` that of the first out.
Error prepare_legit(PrepareContext& ctx, Span<EValue* const> args, int stats, int flag, int out) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, static_cast<size_t>(out) + 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  const Tensor& x = args[0]->tensor;
  if (x.dtype != ScalarType::Float32 && x.dtype != ScalarType::Float64) return fail_dtype(ctx, "input", x.dtype);
  if (x.dim < 2) return ctx.fail(Error::InvalidProgram, "input must be at least 2-d, got %d-d", x.dim);
  TERN_CHECK_OK(check_channel(ctx, *args[1], "weight", x, true));
  TERN_CHECK_OK(check_channel(ctx, *args[2], "bias", x, true));
  TERN_CHECK_OK(ctx.expect_tag(args, static_cast<size_t>(flag), Tag::Bool));
  const bool training = stats < 0 || args[flag]->b;
  if (stats >= 0) {
    TERN_CHECK_OK(check_channel(ctx, *args[stats], "running_mean", x, !training));
    TERN_CHECK_OK(check_channel(ctx, *args[stats + 1], "running_var", x, !training));
    if (!training && (args[stats]->is_none() || args[stats + 1]->is_none())) {
      return ctx.fail(Error::InvalidProgram, "running_mean and running_var are required without training");
    }
  }
  if (!args[flag + 2]->is_scalar()) return ctx.fail(Error::InvalidProgram, "eps must be a float");
  TERN_CHECK_OK(ctx.expect_tensor(args, static_cast<size_t>(out)));
  TERN_CHECK_OK(expect_same_shape(ctx, x, args[out]->tensor, "input", "out"));
  const int64_t saved[] = {training ? x.sizes[1] : 0};
  const char* names[] = {"save_mean", "save_invstd"};
  for (int i = 0; i < 2; ++i) {
    TERN_CHECK_OK(ctx.expect_tensor(args, static_cast<size_t>(out + 1 + i)));
    TERN_CHECK_OK(expect_dtype(ctx, args[out + 1 + i]->tensor, names[i], x.dtype));
    TERN_CHECK_OK(expect_sizes(ctx, args[out + 1 + i]->tensor, names[i], saved, 1));
  }
  int64_t inner = 1;
  for (int i = 2; i < x.dim; ++i) inner *= x.sizes[i];
  const LegitState st{x.sizes[0], x.sizes[1], inner, args[flag + 2]->to_double(), 1, 2,
                      static_cast<int8_t>(stats), static_cast<int8_t>(stats < 0 ? -1 : stats + 1),
                      static_cast<int8_t>(out), training};
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(x.dtype == ScalarType::Float32 ? legit_run<float> : legit_run<double>);
  return Error::Ok;
}

Error prepare_with_stats(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_legit(ctx, args, /*stats=*/3, /*flag=*/5, /*out=*/8);
}

Error prepare_no_stats(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_legit(ctx, args, /*stats=*/-1, /*flag=*/3, /*out=*/6);
}

}  // namespace

// float16 / bfloat16: staged through float32 (half_stage.h); the running
// statistics are only read, so staging them in is enough.
Error native_batch_norm_legit_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, prepare_with_stats, 3);
}

Error native_batch_norm_legit_no_stats_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, prepare_no_stats, 3);
}

}  // namespace portable
}  // namespace tern
