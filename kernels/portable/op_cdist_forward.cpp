// aten::_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor
// args: [x1, x2, p, compute_mode, out]
//
// torch.cdist: x1 [..., r1, m], x2 [..., r2, m] (float32 or float64, the
// same; the leading dims broadcast) -> out [..., r1, r2], the p-norm
// distance of every row pair (util/distance.h). torch.cdist itself takes
// this op only when ATen computes directly; for p = 2 with more than 25 rows
// (compute_mode None or 0) or compute_mode 1, ATen (and so this kernel) uses
// the matrix-product form sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), which is not
// exactly 0 for equal rows. compute_mode 2 never uses it.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/distance.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct CdistState {
  double p;
  NormKind kind;
  int32_t use_mm;
};

// sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), ATen's _euclidean_dist.
template <typename T>
T mm_distance(const T* a, const T* b, int64_t m) {
  T dot = 0, na = 0, nb = 0;
  for (int64_t k = 0; k < m; ++k) {
    dot += T(-2) * a[k] * b[k];
    na += a[k] * a[k];
    nb += b[k] * b[k];
  }
  const T v = dot + na + nb;
  return std::sqrt(v < T(0) ? T(0) : v);
}

// The batch dims of t (its dims but the last two) read against out's batch
// dims: stride 0 where t has size 1 or lacks the dim.
Odometer batch_odometer(const Tensor& t, const Tensor& out) {
  Odometer o;
  const int nb = out.dim - 2, lead = nb - (t.dim - 2);
  for (int d = 0; d < nb; ++d) {
    const int td = d - lead;
    int64_t stride = 1;  // in matrices
    for (int k = td + 1; k < t.dim - 2; ++k) stride *= t.sizes[k];
    o.add(out.sizes[d], td < 0 || t.sizes[td] == 1 ? 0 : stride);
  }
  return o;
}

template <typename T>
Error cdist_run(RunContext& ctx, EValue* const* args) {
  CdistState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& x1 = args[0]->tensor;
  const Tensor& x2 = args[1]->tensor;
  const Tensor& out = args[4]->tensor;
  const int64_t r1 = x1.sizes[x1.dim - 2], r2 = x2.sizes[x2.dim - 2], m = x1.sizes[x1.dim - 1];
  if (out.numel == 0) return Error::Ok;
  Odometer b1 = batch_odometer(x1, out), b2 = batch_odometer(x2, out);
  const T p = static_cast<T>(st.p);
  for (int64_t b = 0, n = b1.count(); b < n; ++b, b1.next(), b2.next()) {
    const T* a = x1.data_as<const T>() + b1.offset * r1 * m;
    const T* c = x2.data_as<const T>() + b2.offset * r2 * m;
    T* o = out.data_as<T>() + b * r1 * r2;
    ctx.parallel_for(r1, 1, [&](RunContext&, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = 0; j < r2; ++j) {
          o[i * r2 + j] = st.use_mm ? mm_distance(a + i * m, c + j * m, m)
                                    : row_distance(a + i * m, c + j * m, m, st.kind, p, false);
        }
      }
    });
  }
  return Error::Ok;
}

// out's sizes: the broadcast batch dims of x1 and x2, then [r1, r2].
Error cdist_out_sizes(PrepareContext& ctx, const Tensor& x1, const Tensor& x2, int64_t* sizes,
                      int* dim) {
  *dim = x1.dim > x2.dim ? x1.dim : x2.dim;
  const int nb = *dim - 2;
  for (int d = 0; d < nb; ++d) {
    const int d1 = d - (nb - (x1.dim - 2)), d2 = d - (nb - (x2.dim - 2));
    const int64_t s1 = d1 < 0 ? 1 : x1.sizes[d1], s2 = d2 < 0 ? 1 : x2.sizes[d2];
    if (s1 != s2 && s1 != 1 && s2 != 1) {
      return ctx.fail(Error::InvalidProgram,
                      "batch dims of x1 and x2 do not broadcast (%lld, %lld)", (long long)s1,
                      (long long)s2);
    }
    sizes[d] = s1 == 1 ? s2 : s1;
  }
  sizes[nb] = x1.sizes[x1.dim - 2];
  sizes[nb + 1] = x2.sizes[x2.dim - 2];
  return Error::Ok;
}

}  // namespace

static Error cdist_forward_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& x1 = args[0]->tensor;
  const Tensor& x2 = args[1]->tensor;
  switch (x1.dtype) {
    case ScalarType::Float32: ctx.set_run(cdist_run<float>); break;
    case ScalarType::Float64: ctx.set_run(cdist_run<double>); break;
    default: return fail_dtype(ctx, "x1", x1.dtype);
  }
  TERN_CHECK_OK(expect_dtype(ctx, x2, "x2", x1.dtype));
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "out", x1.dtype));
  if (x1.dim < 2 || x2.dim < 2 || x1.sizes[x1.dim - 1] != x2.sizes[x2.dim - 1]) {
    return ctx.fail(Error::InvalidProgram, "x1 and x2 must be at least 2-d with the same number "
                    "of columns");
  }
  const EValue& pv = *args[2];
  const EValue& mode = *args[3];
  if (!(pv.is_double() || pv.is_int()) || !(pv.to_double() >= 0)) {
    return ctx.fail(Error::InvalidProgram, "p must be a number >= 0");
  }
  if (!mode.is_none() && !(mode.is_int() && mode.i >= 0 && mode.i <= 2)) {
    return ctx.fail(Error::InvalidProgram, "compute_mode must be None, 0, 1 or 2");
  }
  int64_t sizes[kMaxDims];
  int dim = 0;
  TERN_CHECK_OK(cdist_out_sizes(ctx, x1, x2, sizes, &dim));
  TERN_CHECK_OK(expect_sizes(ctx, args[4]->tensor, "out", sizes, dim));
  const int64_t m = mode.is_int() ? mode.i : 0;
  CdistState st{pv.to_double(), norm_kind(pv.to_double()), 0};
  st.use_mm = st.p == 2 && (m == 1 || (m == 0 && (sizes[dim - 2] > 25 || sizes[dim - 1] > 25)));
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error cdist_forward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, cdist_forward_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
