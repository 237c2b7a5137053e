// aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None,
//                         Layout? layout=None, Device? device=None,
//                         bool? pin_memory=None) -> Tensor
// args: [start, end, step, dtype, layout, device, pin_memory, out]
//
// out[i] = start + i * step for i < ceil((end - start) / step), computed as
// torch does: in double for floating outs; for integer outs start and step
// are truncated to int64 first. The length follows torch too: integer
// arithmetic on the truncated values for int64, double arithmetic on the
// original values otherwise. Without dtype: float32 if any Scalar is a
// Double, else int64. Supported dtypes: float32, float64, int32, int64.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct ArangeState {
  double start_d, step_d;     // floating outs
  uint64_t start_i, step_i;   // integer outs (wrapping arithmetic, never UB)
};
static_assert(sizeof(ArangeState) <= PrepareContext::kStateBytes, "state too large");

template <typename T>
Error arange_run(RunContext& ctx, EValue* const* args) {
  Tensor& out = args[7]->tensor;
  const auto* s = static_cast<const ArangeState*>(ctx.state());
  T* p = out.data_as<T>();
  for (int64_t i = 0; i < out.numel; ++i) {
    if constexpr (kIsFloat<T>) {
      p[i] = static_cast<T>(s->start_d + s->step_d * static_cast<double>(i));
    } else {
      p[i] = static_cast<T>(s->start_i + s->step_i * static_cast<uint64_t>(i));
    }
  }
  return Error::Ok;
}

// A Scalar truncated to int64, as torch's checked Scalar::to<int64_t>().
bool to_int64(const EValue& v, int64_t* out) {
  if (!v.is_double()) {
    *out = v.is_int() ? v.i : (v.b ? 1 : 0);
    return true;
  }
  const double t = std::trunc(v.d);
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return false;
  *out = static_cast<int64_t>(t);
  return true;
}

// The length for a floating out (and int32's, which torch computes the same way).
Error float_length(PrepareContext& ctx, double start, double end, double step, double* size) {
  if (step == 0) return ctx.fail(Error::InvalidProgram, "step must be nonzero");
  if (!std::isfinite(start) || !std::isfinite(end)) {
    return ctx.fail(Error::InvalidProgram, "unsupported range %g -> %g", start, end);
  }
  if (!((step > 0 && end >= start) || (step < 0 && end <= start))) {
    return ctx.fail(Error::InvalidProgram, "range %g -> %g inconsistent with step %g", start, end,
                    step);
  }
  *size = std::ceil((end - start) / step);
  return Error::Ok;
}

// Integer outs: validates the truncated bounds; int64 takes its length from them.
Error int_length(PrepareContext& ctx, Span<EValue* const> args, bool is_int64, ArangeState* s,
                 double* size) {
  int64_t start, end, step;
  if (!to_int64(*args[0], &start) || !to_int64(*args[1], &end) || !to_int64(*args[2], &step)) {
    return ctx.fail(Error::InvalidProgram, "start, end or step does not fit int64");
  }
  if (step == 0) return ctx.fail(Error::InvalidProgram, "step must be nonzero");
  if (!((step > 0 && end >= start) || (step < 0 && end <= start))) {
    return ctx.fail(Error::InvalidProgram, "range %lld -> %lld inconsistent with step %lld",
                    (long long)start, (long long)end, (long long)step);
  }
  s->start_i = static_cast<uint64_t>(start);
  s->step_i = static_cast<uint64_t>(step);
  if (!is_int64) {
    return float_length(ctx, args[0]->to_double(), args[1]->to_double(), args[2]->to_double(), size);
  }
  // ceil((end - start) / step) on magnitudes: |end - start| always fits uint64.
  const uint64_t span = step > 0 ? uint64_t(end) - uint64_t(start) : uint64_t(start) - uint64_t(end);
  const uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
  *size = static_cast<double>(span / stride + (span % stride != 0));
  return Error::Ok;
}

}  // namespace

Error arange_start_step_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  for (size_t i = 0; i < 3; ++i) {
    if (!args[i]->is_scalar()) {
      return ctx.fail(Error::InvalidProgram, "argument %zu must be a Scalar, got %s", i,
                      tag_name(args[i]->tag));
    }
  }
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const bool any_double = args[0]->is_double() || args[1]->is_double() || args[2]->is_double();
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[3], "dtype",
                                     any_double ? ScalarType::Float32 : ScalarType::Int64, &dtype));
  const Tensor& out = args[7]->tensor;
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", dtype));
  ArangeState state{args[0]->to_double(), args[2]->to_double(), 0, 0};
  double size = 0;
  switch (dtype) {
    case ScalarType::Float32:
    case ScalarType::Float64:
      TERN_CHECK_OK(float_length(ctx, state.start_d, args[1]->to_double(), state.step_d, &size));
      ctx.set_run(dtype == ScalarType::Float32 ? arange_run<float> : arange_run<double>);
      break;
    case ScalarType::Int32:
    case ScalarType::Int64:
      TERN_CHECK_OK(int_length(ctx, args, dtype == ScalarType::Int64, &state, &size));
      ctx.set_run(dtype == ScalarType::Int32 ? arange_run<int32_t> : arange_run<int64_t>);
      break;
    default:
      return fail_dtype(ctx, "out", dtype);
  }
  if (!(size >= 0 && size < 9.2e18)) {
    return ctx.fail(Error::InvalidProgram, "arange length %g out of range", size);
  }
  const int64_t n = static_cast<int64_t>(size);
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", &n, 1));
  memmove(ctx.state(), &state, sizeof(state));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
