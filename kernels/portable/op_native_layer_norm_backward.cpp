// aten::native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape,
//     Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask)
//     -> (Tensor, Tensor, Tensor)
// args: [grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask,
//        grad_input, grad_weight, grad_bias]
//
// The gradients of aten::native_layer_norm (op_native_layer_norm.cpp), from
// the mean and rstd it returned. float32 and float64, accumulated in the
// same type; float16 / bfloat16 staged through float32 (half_stage.h). As in
// the forward, the last len(normalized_shape) dims form rows of `cols`
// elements, one mean and rstd per row. With xhat = (x - mean) * rstd and
// g = grad_out * weight (grad_out alone without weight), per row:
//   grad_input  = rstd * (g - mean(g) - xhat * mean(g * xhat))
// and per column, summed over the rows:
//   grad_weight = sum(grad_out * xhat),  grad_bias = sum(grad_out)
// Each is computed when output_mask asks for it, grad_weight only with a
// weight and grad_bias only with a bias (ATen returns None otherwise, and the
// out is then an empty placeholder left alone).
#include <cstring>
#include <initializer_list>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct LayerNormBackward {
  int64_t rows, cols;
  bool has_weight;
  bool want[3];  // grad_input, grad_weight, grad_bias
};

// Elements a thread should get at least.
constexpr int64_t kMinElementsPerThread = 1 << 14;

template <typename T>
void grad_input_row(const T* dy, const T* x, T mean, T rstd, const T* w, int64_t cols, T* dx) {
  T sum_g = 0, sum_gx = 0;
  for (int64_t j = 0; j < cols; ++j) {
    const T g = w ? dy[j] * w[j] : dy[j];
    sum_g += g;
    sum_gx += g * (x[j] - mean) * rstd;
  }
  const T mean_g = sum_g / static_cast<T>(cols), mean_gx = sum_gx / static_cast<T>(cols);
  for (int64_t j = 0; j < cols; ++j) {
    const T g = w ? dy[j] * w[j] : dy[j];
    dx[j] = rstd * (g - mean_g - (x[j] - mean) * rstd * mean_gx);
  }
}

template <typename T>
Error run(RunContext& ctx, EValue* const* args) {
  LayerNormBackward st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* dy = args[0]->tensor.data_as<const T>();
  const T* x = args[1]->tensor.data_as<const T>();
  const T* mean = args[3]->tensor.data_as<const T>();
  const T* rstd = args[4]->tensor.data_as<const T>();
  const T* w = st.has_weight ? args[5]->tensor.data_as<const T>() : nullptr;
  const int64_t cols = st.cols;
  if (st.want[0]) {
    T* dx = args[8]->tensor.data_as<T>();
    ctx.parallel_for(st.rows, grain_for(kMinElementsPerThread, {cols}), [&](RunContext&, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        grad_input_row(dy + r * cols, x + r * cols, mean[r], rstd[r], w, cols, dx + r * cols);
      }
    });
  }
  if (!st.want[1] && !st.want[2]) return Error::Ok;
  T* dw = st.want[1] ? args[9]->tensor.data_as<T>() : nullptr;
  T* db = st.want[2] ? args[10]->tensor.data_as<T>() : nullptr;
  // Threads take column ranges; each walks all rows over its range.
  ctx.parallel_for(cols, grain_for(kMinElementsPerThread, {st.rows}), [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      if (dw) dw[j] = 0;
      if (db) db[j] = 0;
    }
    for (int64_t r = 0; r < st.rows; ++r) {
      const T* dyr = dy + r * cols;
      const T* xr = x + r * cols;
      for (int64_t j = begin; j < end; ++j) {
        if (dw) dw[j] += dyr[j] * (xr[j] - mean[r]) * rstd[r];
        if (db) db[j] += dyr[j];
      }
    }
  });
  return Error::Ok;
}

// weight or bias: None, or a tensor of `dtype` with sizes normalized_shape.
Error check_affine(PrepareContext& ctx, const EValue& v, const char* name, ScalarType dtype, const int64_t* sizes,
                   int dim) {
  if (v.is_none()) return Error::Ok;
  if (!v.is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "%s must be a tensor or None, got %s", name, tag_name(v.tag));
  }
  TERN_CHECK_OK(expect_dtype(ctx, v.tensor, name, dtype));
  return expect_sizes(ctx, v.tensor, name, sizes, dim);
}

Error check_args(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 11));
  for (int i : {0, 1, 3, 4}) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::IntList));
  const ScalarType t = args[0]->tensor.dtype;
  if (t != ScalarType::Float32 && t != ScalarType::Float64) return fail_dtype(ctx, "grad_out", t);
  TERN_CHECK_OK(expect_same_shape(ctx, args[1]->tensor, args[0]->tensor, "input", "grad_out"));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "mean", t));
  return expect_dtype(ctx, args[4]->tensor, "rstd", t);
}

// rows and cols of input split at normalized_shape, which must be its last dims.
Error split_rows(PrepareContext& ctx, const Tensor& x, Span<const int64_t> shape, int64_t* rows, int64_t* cols) {
  const int nd = static_cast<int>(shape.size());
  if (nd < 1 || nd > x.dim) {
    return ctx.fail(Error::InvalidProgram, "normalized_shape has %d dims for a %d-d input", nd, x.dim);
  }
  *rows = *cols = 1;
  for (int i = 0; i < x.dim; ++i) {
    const int axis = x.dim - nd;
    if (i >= axis && x.sizes[i] != shape[i - axis]) {
      return ctx.fail(Error::InvalidProgram, "normalized_shape[%d] = %lld but input size is %lld", i - axis,
                      (long long)shape[i - axis], (long long)x.sizes[i]);
    }
    (i < axis ? *rows : *cols) *= x.sizes[i];
  }
  return Error::Ok;
}

}  // namespace

static Error native_layer_norm_backward_prepare_typed(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_args(ctx, args));
  const Tensor& x = args[1]->tensor;
  const ScalarType t = x.dtype;
  const Span<const int64_t> shape = args[2]->ints;
  LayerNormBackward st{};
  TERN_CHECK_OK(split_rows(ctx, x, shape, &st.rows, &st.cols));
  for (int i : {3, 4}) {
    if (args[i]->tensor.numel != st.rows) {
      return ctx.fail(Error::InvalidProgram, "%s has %lld elements, one per row (%lld) expected",
                      i == 3 ? "mean" : "rstd", (long long)args[i]->tensor.numel, (long long)st.rows);
    }
  }
  const int nd = static_cast<int>(shape.size());
  TERN_CHECK_OK(check_affine(ctx, *args[5], "weight", t, x.sizes + x.dim - nd, nd));
  TERN_CHECK_OK(check_affine(ctx, *args[6], "bias", t, x.sizes + x.dim - nd, nd));
  bool mask[3];
  TERN_CHECK_OK(read_output_mask(ctx, *args[7], mask));
  st.has_weight = args[5]->is_tensor();
  st.want[0] = mask[0];
  st.want[1] = mask[1] && st.has_weight;
  st.want[2] = mask[2] && args[6]->is_tensor();
  const char* names[] = {"grad_input", "grad_weight", "grad_bias"};
  for (int i = 0; i < 3; ++i) {
    if (!st.want[i]) continue;
    TERN_CHECK_OK(ctx.expect_tensor(args, 8 + i));
    TERN_CHECK_OK(expect_dtype(ctx, args[8 + i]->tensor, names[i], t));
    const int64_t* sizes = i == 0 ? x.sizes : x.sizes + x.dim - nd;
    TERN_CHECK_OK(expect_sizes(ctx, args[8 + i]->tensor, names[i], sizes, i == 0 ? x.dim : nd));
  }
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(t == ScalarType::Float32 ? run<float> : run<double>);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error native_layer_norm_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, native_layer_norm_backward_prepare_typed, 3);
}

}  // namespace portable
}  // namespace tern
