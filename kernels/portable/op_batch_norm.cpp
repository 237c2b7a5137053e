// aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight,
//     Tensor? bias, Tensor running_mean, Tensor running_var, float momentum,
//     float eps) -> (Tensor, Tensor, Tensor)
// args: [input, weight, bias, running_mean, running_var, momentum, eps,
//        out, save_mean, save_invstd]
//
// input [n, c, ...] float32 or float64 (float16 / bfloat16 staged through
// float32), all tensors of its dtype: per channel
//   out = x * scale + shift,  scale = weight / sqrt(var + eps),
//                             shift = bias - mean * scale
// In inference ATen returns empty save_mean / save_invstd (sizes [0]); they
// are checked but never written.
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct BatchNormState {
  int64_t n, c, inner;  // input viewed as [n, c, inner]
  double eps;
};

template <typename T>
Error batch_norm_run(RunContext& ctx, EValue* const* args) {
  BatchNormState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* x = args[0]->tensor.data_as<const T>();
  const T* weight = args[1]->is_tensor() ? args[1]->tensor.data_as<const T>() : nullptr;
  const T* bias = args[2]->is_tensor() ? args[2]->tensor.data_as<const T>() : nullptr;
  const T* mean = args[3]->tensor.data_as<const T>();
  const T* var = args[4]->tensor.data_as<const T>();
  T* y = args[7]->tensor.data_as<T>();
  for (int64_t n = 0; n < st.n; ++n) {
    for (int64_t c = 0; c < st.c; ++c) {
      const double s = (weight ? weight[c] : 1.0) / std::sqrt(static_cast<double>(var[c]) + st.eps);
      const T scale = static_cast<T>(s);
      const T shift = static_cast<T>((bias ? bias[c] : 0.0) - mean[c] * s);
      const int64_t base = (n * st.c + c) * st.inner;
      for (int64_t i = 0; i < st.inner; ++i) y[base + i] = x[base + i] * scale + shift;
    }
  }
  return Error::Ok;
}

// A per-channel tensor: [c] of the input's dtype; None allowed when `optional`.
Error check_channel(PrepareContext& ctx, const EValue& v, const char* name, int64_t c,
                    ScalarType dtype, bool optional) {
  if (optional && v.is_none()) return Error::Ok;
  if (!v.is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "%s must be a tensor%s, got %s", name,
                    optional ? " or None" : "", tag_name(v.tag));
  }
  TERN_CHECK_OK(expect_dtype(ctx, v.tensor, name, dtype));
  const int64_t sizes[] = {c};
  return expect_sizes(ctx, v.tensor, name, sizes, 1);
}

}  // namespace

static Error batch_norm_no_training_prepare_impl(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 10));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  const Tensor& x = args[0]->tensor;
  if (x.dtype != ScalarType::Float32 && x.dtype != ScalarType::Float64) return fail_dtype(ctx, "input", x.dtype);
  if (x.dim < 2) {
    return ctx.fail(Error::InvalidProgram, "input must be at least 2-d, got %d-d", x.dim);
  }
  const int64_t c = x.sizes[1];
  TERN_CHECK_OK(check_channel(ctx, *args[1], "weight", c, x.dtype, true));
  TERN_CHECK_OK(check_channel(ctx, *args[2], "bias", c, x.dtype, true));
  TERN_CHECK_OK(check_channel(ctx, *args[3], "running_mean", c, x.dtype, false));
  TERN_CHECK_OK(check_channel(ctx, *args[4], "running_var", c, x.dtype, false));
  if (!args[5]->is_scalar() || !args[6]->is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "momentum and eps must be floats");
  }
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  TERN_CHECK_OK(expect_same_shape(ctx, x, args[7]->tensor, "input", "out"));
  const int64_t empty[] = {0};
  const char* names[] = {"save_mean", "save_invstd"};
  for (int i = 0; i < 2; ++i) {
    TERN_CHECK_OK(ctx.expect_tensor(args, 8 + i));
    TERN_CHECK_OK(expect_sizes(ctx, args[8 + i]->tensor, names[i], empty, 1));
  }
  int64_t inner = 1;
  for (int i = 2; i < x.dim; ++i) inner *= x.sizes[i];
  const BatchNormState st{x.sizes[0], c, inner, args[6]->to_double()};
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(x.dtype == ScalarType::Float32 ? batch_norm_run<float> : batch_norm_run<double>);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error batch_norm_no_training_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, batch_norm_no_training_prepare_impl, 3);
}

}  // namespace portable
}  // namespace tern
