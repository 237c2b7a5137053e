// aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//                      bool keepdim=False) -> Tensor
// args: [self, dim, correction, keepdim, out]
//
// aten::var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor
// args: [self, dim, unbiased, keepdim, out]
//
// The variance over `dim` (None or [] = every dim):
//   sum((x - mean)^2) / max(N - correction, 0)
// with correction 1 when None (unbiased: 1, else 0). As torch: N <= correction
// divides by 0 (inf, or NaN when every x is equal), an empty reduction is NaN.
// Two passes per out element in double, the mean and then the squared
// deviations from it, so a large mean costs no digits (the one-pass
// sum-of-squares formula loses them). x.std() exports as var + sqrt.
// float32 and float64, out of self's dtype. See util/reduce.h for the plan.
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {
namespace {

struct VarState {
  uint32_t mask;
  int64_t count;  // elements per out element
  double divisor;
};

// Last group reduced: each out element's elements are contiguous runs.
template <typename T>
void var_last_reduced(const T* in, T* out, const ReducePlan& p, int64_t count, double divisor) {
  Odometer kept, reduced;
  reduce_odometers(p, &kept, &reduced);
  const int64_t run = p.sizes[p.groups - 1];
  const int64_t n_out = kept.count(), n_runs = reduced.count();
  for (int64_t o = 0; o < n_out; ++o, kept.next()) {
    double sum = 0;
    for (int64_t r = 0; r < n_runs; ++r, reduced.next()) {
      const T* s = in + kept.offset + reduced.offset;
      for (int64_t i = 0; i < run; ++i) sum += s[i];
    }
    const double mean = sum / static_cast<double>(count);
    double m2 = 0;
    for (int64_t r = 0; r < n_runs; ++r, reduced.next()) {
      const T* s = in + kept.offset + reduced.offset;
      for (int64_t i = 0; i < run; ++i) {
        const double d = s[i] - mean;
        m2 += d * d;
      }
    }
    out[o] = static_cast<T>(m2 / divisor);
  }
}

// Last group kept (cols): each out row folds whole input rows, kSumBlock
// columns at a time, into the means and then the squared deviations
// (scratch: 2 * kSumBlock doubles).
template <typename T>
void var_last_kept(const T* in, T* out, const ReducePlan& p, int64_t count, double divisor,
                   double* mean) {
  double* m2 = mean + kSumBlock;
  Odometer kept, reduced;
  reduce_odometers(p, &kept, &reduced);
  const int64_t cols = p.sizes[p.groups - 1];
  const int64_t n_rows = kept.count(), n_reduced = reduced.count();
  for (int64_t o = 0; o < n_rows; ++o, kept.next(), out += cols) {
    for (int64_t c0 = 0; c0 < cols; c0 += kSumBlock) {
      const int64_t n = std::min(cols - c0, kSumBlock);
      std::fill(mean, mean + n, 0.0);
      std::fill(m2, m2 + n, 0.0);
      for (int64_t r = 0; r < n_reduced; ++r, reduced.next()) {
        const T* row = in + kept.offset + reduced.offset + c0;
        for (int64_t c = 0; c < n; ++c) mean[c] += row[c];
      }
      for (int64_t c = 0; c < n; ++c) mean[c] /= static_cast<double>(count);
      for (int64_t r = 0; r < n_reduced; ++r, reduced.next()) {
        const T* row = in + kept.offset + reduced.offset + c0;
        for (int64_t c = 0; c < n; ++c) {
          const double d = row[c] - mean[c];
          m2[c] += d * d;
        }
      }
      for (int64_t c = 0; c < n; ++c) out[c0 + c] = static_cast<T>(m2[c] / divisor);
    }
  }
}

template <typename T>
Error var_run(RunContext& ctx, EValue* const* args) {
  VarState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  ReducePlan plan;
  reduce_plan(self, st.mask, &plan);
  const T* in = self.data_as<const T>();
  T* out = args[4]->tensor.data_as<T>();
  if (plan.reduced[plan.groups - 1]) {
    var_last_reduced(in, out, plan, st.count, st.divisor);
  } else {
    var_last_kept(in, out, plan, st.count, st.divisor, static_cast<double*>(ctx.scratch()));
  }
  return Error::Ok;
}

// The checks of both overloads, once the correction is known.
Error prepare_var(PrepareContext& ctx, Span<EValue* const> args, double correction) {
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[4]->tensor;
  VarState st;
  TERN_CHECK_OK(reduce_dims_mask(ctx, *args[1], self.dim, &st.mask));
  int64_t sizes[kMaxDims];
  const int rank = reduce_out_sizes(self, st.mask, args[3]->b, sizes);
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, rank));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", self.dtype));
  if (self.dtype == ScalarType::Float32) {
    ctx.set_run(var_run<float>);
  } else if (self.dtype == ScalarType::Float64) {
    ctx.set_run(var_run<double>);
  } else if (scalar_type_is_floating(self.dtype)) {
    return fail_dtype(ctx, "self", self.dtype);
  } else {
    return ctx.fail(Error::InvalidProgram, "var needs a floating self, got %s",
                    scalar_type_name(self.dtype));
  }
  st.count = reduce_count(self, st.mask);
  st.divisor = std::max(static_cast<double>(st.count) - correction, 0.0);
  ReducePlan plan;
  reduce_plan(self, st.mask, &plan);
  if (!plan.reduced[plan.groups - 1]) ctx.request_scratch(2 * kSumBlock * sizeof(double));
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

}  // namespace

Error var_correction_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  const EValue& c = *args[2];
  if (!(c.is_none() || c.tag == Tag::Int || c.tag == Tag::Double)) {
    return ctx.fail(Error::InvalidProgram, "correction must be Int, Double or None, got %s",
                    tag_name(c.tag));
  }
  const double correction = c.is_none() ? 1.0 : c.tag == Tag::Int ? static_cast<double>(c.i) : c.d;
  return prepare_var(ctx, args, correction);
}

Error var_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  return prepare_var(ctx, args, args[2]->b ? 1.0 : 0.0);
}

}  // namespace portable
}  // namespace tern
