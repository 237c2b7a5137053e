// aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
//     SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)
// args: [input, weight, bias, N, C, HxW, group, eps, out, mean, rstd]
//
// float32 or float64 (float16 / bfloat16 staged through float32); weight,
// bias, out, mean and rstd in input's dtype. input [N, C, *] is
// N * group rows of C / group * HxW contiguous
// elements; each row is normalized by its own statistics:
//   out = (x - mean) * rstd * weight[c] + bias[c],  rstd = 1 / sqrt(var + eps)
// with the biased variance, accumulated in double (two passes); the row is
// normalized in input's dtype. mean and rstd are [N, group]. nn.GroupNorm
// exports to this op.
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct GroupNormState {
  int64_t n, c, hxw, group;
  double eps;
};

// One (n, g) row: channels [c0, c0 + channels) of one sample.
template <typename T>
void group_norm_row(const T* x, int64_t channels, int64_t hxw, double eps, const T* weight, const T* bias,
                    T* y, T* mean_out, T* rstd_out) {
  const int64_t count = channels * hxw;
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(count);
  double sq = 0.0;
  for (int64_t i = 0; i < count; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(count) + eps);
  const T m = static_cast<T>(mean), r = static_cast<T>(rstd);
  for (int64_t c = 0; c < channels; ++c) {
    const T scale = weight ? r * weight[c] : r;
    const T shift = bias ? bias[c] : T(0);
    for (int64_t i = c * hxw; i < (c + 1) * hxw; ++i) y[i] = (x[i] - m) * scale + shift;
  }
  *mean_out = m;
  *rstd_out = r;
}

template <typename T>
Error native_group_norm_run(RunContext& ctx, EValue* const* args) {
  GroupNormState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* x = args[0]->tensor.data_as<const T>();
  const T* weight = args[1]->is_tensor() ? args[1]->tensor.data_as<const T>() : nullptr;
  const T* bias = args[2]->is_tensor() ? args[2]->tensor.data_as<const T>() : nullptr;
  T* y = args[8]->tensor.data_as<T>();
  T* mean = args[9]->tensor.data_as<T>();
  T* rstd = args[10]->tensor.data_as<T>();
  const int64_t channels = st.c / st.group;
  const int64_t row = channels * st.hxw;
  for (int64_t r = 0; r < st.n * st.group; ++r) {
    const int64_t c0 = (r % st.group) * channels;
    group_norm_row(x + r * row, channels, st.hxw, st.eps, weight ? weight + c0 : nullptr,
                   bias ? bias + c0 : nullptr, y + r * row, mean + r, rstd + r);
  }
  return Error::Ok;
}

// weight or bias: None, or [C] in input's dtype.
Error check_affine(PrepareContext& ctx, const EValue& v, const char* name, ScalarType dtype, int64_t c) {
  if (v.is_none()) return Error::Ok;
  if (!v.is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "%s must be a tensor or None, got %s", name,
                    tag_name(v.tag));
  }
  if (v.tensor.dtype != dtype) return fail_dtype(ctx, name, v.tensor.dtype);
  return expect_sizes(ctx, v.tensor, name, &c, 1);
}

// The argument tags; input float32 or float64 (picks the run function),
// out, mean and rstd in its dtype.
Error check_tags(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 11));
  const int tensor_args[] = {0, 8, 9, 10};
  const char* names[] = {"input", "out", "mean", "rstd"};
  for (int i = 0; i < 4; ++i) TERN_CHECK_OK(ctx.expect_tensor(args, tensor_args[i]));
  const ScalarType dtype = args[0]->tensor.dtype;
  switch (dtype) {
    case ScalarType::Float32: ctx.set_run(native_group_norm_run<float>); break;
    case ScalarType::Float64: ctx.set_run(native_group_norm_run<double>); break;
    default: return fail_dtype(ctx, "input", dtype);
  }
  for (int i = 1; i < 4; ++i) {
    const ScalarType t = args[tensor_args[i]]->tensor.dtype;
    if (t != dtype) return fail_dtype(ctx, names[i], t);
  }
  for (int i = 3; i <= 6; ++i) TERN_CHECK_OK(ctx.expect_tag(args, i, Tag::Int));
  if (!args[7]->is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "eps must be a float, got %s", tag_name(args[7]->tag));
  }
  return Error::Ok;
}

// N, C, HxW must describe input: [N, C, *] with HxW = product of the rest.
Error check_dims(PrepareContext& ctx, const Tensor& x, const GroupNormState& st) {
  int64_t hxw = 1;
  for (int d = 2; d < x.dim; ++d) hxw *= x.sizes[d];
  if (x.dim < 2 || st.n != x.sizes[0] || st.c != x.sizes[1] || st.hxw != hxw) {
    return ctx.fail(Error::InvalidProgram,
                    "N, C, HxW = %lld, %lld, %lld do not describe a %d-d input [N, C, *]",
                    (long long)st.n, (long long)st.c, (long long)st.hxw, x.dim);
  }
  if (st.hxw <= 0 || st.c <= 0) {
    return ctx.fail(Error::InvalidProgram, "C and HxW must be positive, got %lld and %lld",
                    (long long)st.c, (long long)st.hxw);
  }
  if (st.group <= 0 || st.c % st.group != 0) {
    return ctx.fail(Error::InvalidProgram, "group %lld must be positive and divide C = %lld",
                    (long long)st.group, (long long)st.c);
  }
  return Error::Ok;
}

}  // namespace

static Error native_group_norm_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_tags(ctx, args));
  const Tensor& x = args[0]->tensor;
  const GroupNormState st{args[3]->i, args[4]->i, args[5]->i, args[6]->i, args[7]->to_double()};
  TERN_CHECK_OK(check_dims(ctx, x, st));
  TERN_CHECK_OK(check_affine(ctx, *args[1], "weight", x.dtype, st.c));
  TERN_CHECK_OK(check_affine(ctx, *args[2], "bias", x.dtype, st.c));
  TERN_CHECK_OK(expect_same_shape(ctx, x, args[8]->tensor, "input", "out"));
  const int64_t stat_sizes[2] = {st.n, st.group};
  TERN_CHECK_OK(expect_sizes(ctx, args[9]->tensor, "mean", stat_sizes, 2));
  TERN_CHECK_OK(expect_sizes(ctx, args[10]->tensor, "rstd", stat_sizes, 2));
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error native_group_norm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, native_group_norm_prepare_f32, 3);
}

}  // namespace portable
}  // namespace tern
