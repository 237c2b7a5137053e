// aten::native_layer_norm(Tensor input, SymInt[] normalized_shape,
//     Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)
// args: [input, normalized_shape, weight, bias, eps, out, mean, rstd]
//
// float32 or float64 (float16 / bfloat16 staged through float32); weight,
// bias, out, mean and rstd in input's dtype. The last len(normalized_shape)
// dims form rows of `cols` elements:
//   out = (x - mean) * rstd * weight + bias,  rstd = 1 / sqrt(var + eps)
// with the biased variance. mean and rstd have sizes
// input.sizes[:axis] + [1] * len(normalized_shape). Statistics are
// accumulated in double (two passes); the row is normalized in input's dtype.
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct LayerNormState {
  int64_t rows, cols;
  double eps;
};

template <typename T>
void layer_norm_row(const T* x, int64_t cols, double eps, const T* weight, const T* bias, T* y,
                    T* mean_out, T* rstd_out) {
  double sum = 0.0;
  for (int64_t j = 0; j < cols; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(cols);
  double sq = 0.0;
  for (int64_t j = 0; j < cols; ++j) sq += (x[j] - mean) * (x[j] - mean);
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
  const T m = static_cast<T>(mean), r = static_cast<T>(rstd);
  for (int64_t j = 0; j < cols; ++j) {
    T v = (x[j] - m) * r;
    if (weight) v *= weight[j];
    if (bias) v += bias[j];
    y[j] = v;
  }
  *mean_out = m;
  *rstd_out = r;
}

template <typename T>
Error native_layer_norm_run(RunContext& ctx, EValue* const* args) {
  LayerNormState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* x = args[0]->tensor.data_as<const T>();
  const T* weight = args[2]->is_tensor() ? args[2]->tensor.data_as<const T>() : nullptr;
  const T* bias = args[3]->is_tensor() ? args[3]->tensor.data_as<const T>() : nullptr;
  T* y = args[5]->tensor.data_as<T>();
  T* mean = args[6]->tensor.data_as<T>();
  T* rstd = args[7]->tensor.data_as<T>();
  for (int64_t i = 0; i < st.rows; ++i) {
    layer_norm_row(x + i * st.cols, st.cols, st.eps, weight, bias, y + i * st.cols, mean + i,
                   rstd + i);
  }
  return Error::Ok;
}

// weight or bias: None, or in input's dtype with sizes normalized_shape.
Error check_affine(PrepareContext& ctx, const EValue& v, const char* name, ScalarType dtype,
                   const int64_t* sizes, int dim) {
  if (v.is_none()) return Error::Ok;
  if (!v.is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "%s must be a tensor or None, got %s", name,
                    tag_name(v.tag));
  }
  if (v.tensor.dtype != dtype) return fail_dtype(ctx, name, v.tensor.dtype);
  return expect_sizes(ctx, v.tensor, name, sizes, dim);
}

// input float32 or float64 (picks the run function); out, mean, rstd alike.
Error check_tensors(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  const int tensor_args[] = {0, 5, 6, 7};
  const char* names[] = {"input", "out", "mean", "rstd"};
  for (int i = 0; i < 4; ++i) TERN_CHECK_OK(ctx.expect_tensor(args, tensor_args[i]));
  const ScalarType dtype = args[0]->tensor.dtype;
  switch (dtype) {
    case ScalarType::Float32: ctx.set_run(native_layer_norm_run<float>); break;
    case ScalarType::Float64: ctx.set_run(native_layer_norm_run<double>); break;
    default: return fail_dtype(ctx, "input", dtype);
  }
  for (int i = 1; i < 4; ++i) {
    const ScalarType t = args[tensor_args[i]]->tensor.dtype;
    if (t != dtype) return fail_dtype(ctx, names[i], t);
  }
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  if (!args[4]->is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "eps must be a float, got %s", tag_name(args[4]->tag));
  }
  return Error::Ok;
}

}  // namespace

static Error native_layer_norm_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_tensors(ctx, args));
  const Tensor& x = args[0]->tensor;
  const Span<const int64_t> shape = args[1]->ints;
  const int nd = static_cast<int>(shape.size());
  if (nd < 1 || nd > x.dim) {
    return ctx.fail(Error::InvalidProgram, "normalized_shape has %d dims for a %d-d input", nd,
                    x.dim);
  }
  const int axis = x.dim - nd;
  int64_t stat_sizes[kMaxDims];
  int64_t rows = 1, cols = 1;
  for (int i = 0; i < x.dim; ++i) {
    if (i >= axis && x.sizes[i] != shape[i - axis]) {
      return ctx.fail(Error::InvalidProgram, "normalized_shape[%d] = %lld but input size is %lld",
                      i - axis, (long long)shape[i - axis], (long long)x.sizes[i]);
    }
    stat_sizes[i] = i < axis ? x.sizes[i] : 1;
    (i < axis ? rows : cols) *= x.sizes[i];
  }
  TERN_CHECK_OK(check_affine(ctx, *args[2], "weight", x.dtype, x.sizes + axis, nd));
  TERN_CHECK_OK(check_affine(ctx, *args[3], "bias", x.dtype, x.sizes + axis, nd));
  TERN_CHECK_OK(expect_same_shape(ctx, x, args[5]->tensor, "input", "out"));
  TERN_CHECK_OK(expect_sizes(ctx, args[6]->tensor, "mean", stat_sizes, x.dim));
  TERN_CHECK_OK(expect_sizes(ctx, args[7]->tensor, "rstd", stat_sizes, x.dim));
  const LayerNormState st{rows, cols, args[4]->to_double()};
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error native_layer_norm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, native_layer_norm_prepare_f32, 3);
}

}  // namespace portable
}  // namespace tern
