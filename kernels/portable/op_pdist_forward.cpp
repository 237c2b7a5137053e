// aten::_pdist_forward(Tensor self, float p=2) -> Tensor
// args: [self, p, out]
//
// F.pdist: self [n, m] (float32 or float64) -> out [n * (n - 1) / 2], the
// p-norm distance (util/distance.h) of rows i < j in row-major order of
// (i, j). NaN propagates through the inf-norm max, as in ATen's vectorized
// pdist.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/distance.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct PdistState {
  double p;
  NormKind kind;
};

template <typename T>
Error pdist_run(RunContext& ctx, EValue* const* args) {
  PdistState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const int64_t n = self.sizes[0], m = self.sizes[1];
  const T* x = self.data_as<const T>();
  T* out = args[2]->tensor.data_as<T>();
  const T p = static_cast<T>(st.p);
  ctx.parallel_for(n, 1, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* o = out + i * n - i * (i + 1) / 2;  // pairs (i, i + 1 ..) start after rows < i
      for (int64_t j = i + 1; j < n; ++j) {
        *o++ = row_distance(x + i * m, x + j * m, m, st.kind, p, true);
      }
    }
  });
  return Error::Ok;
}

}  // namespace

static Error pdist_forward_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  switch (self.dtype) {
    case ScalarType::Float32: ctx.set_run(pdist_run<float>); break;
    case ScalarType::Float64: ctx.set_run(pdist_run<double>); break;
    default: return fail_dtype(ctx, "self", self.dtype);
  }
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  if (self.dim != 2) return ctx.fail(Error::InvalidProgram, "self must be 2-d, got %d-d", self.dim);
  const EValue& pv = *args[1];
  if (!(pv.is_double() || pv.is_int()) || !(pv.to_double() >= 0)) {
    return ctx.fail(Error::InvalidProgram, "p must be a number >= 0");
  }
  const int64_t n = self.sizes[0], pairs = n * (n - 1) / 2;
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", &pairs, 1));
  const PdistState st{pv.to_double(), norm_kind(pv.to_double())};
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error pdist_forward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, pdist_forward_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
