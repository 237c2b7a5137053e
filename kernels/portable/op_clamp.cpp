// aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
// args: [self, min, max, out]. out = min(max(self, min), max), with a None
// bound left out, computed in torch.result_type(self, min, max) (an int
// tensor clamped to 0.5 gives float32; a bool tensor clamped to ints gives
// int64). As in torch: min > max gives max everywhere, a NaN in self stays
// NaN, and a NaN bound gives NaN everywhere. Float and integer results; no
// bool result (torch has none); a bound must fit the result dtype (torch
// wraps -1 to 255 for uint8; Tern rejects it, as hardtanh does).
//
// The exporter's lower_clamp pass turns floating clamps with number bounds
// into aten::hardtanh, so in exported files this kernel mostly sees integers.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct ClampOp {
  T lo, hi;
  T operator()(T x) const {
    T y = x < lo ? lo : x;  // comparisons are false for NaN: NaN passes through
    return y > hi ? hi : y;
  }
};

// A missing bound as the value that never clamps.
template <typename T>
T clamp_bound(const EValue& v, bool upper) {
  using L = std::numeric_limits<T>;
  if (!v.is_none()) return elem_scalar<T>(v);
  if constexpr (std::is_floating_point<T>::value) return upper ? L::infinity() : -L::infinity();
  return upper ? L::max() : L::lowest();
}

struct ClampKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const ClampOp<T> op{clamp_bound<T>(*args[1], false), clamp_bound<T>(*args[2], true)};
    const Tensor& out = args[3]->tensor;
    if constexpr (std::is_floating_point<T>::value) {
      if (std::isnan(op.lo) || std::isnan(op.hi)) {
        T* o = out.data_as<T>();
        for (int64_t i = 0; i < out.numel; ++i) o[i] = std::numeric_limits<T>::quiet_NaN();
        return Error::Ok;
      }
    }
    unary_map<T>(args[0]->tensor, out.data_as<T>(), op);
    return Error::Ok;
  }
};

// min and max: each None or a Scalar that fits `dtype`.
Error expect_bounds(PrepareContext& ctx, Span<EValue* const> args, ScalarType dtype) {
  const char* const names[2] = {"min", "max"};
  for (size_t i = 1; i <= 2; ++i) {
    const EValue& v = *args[i];
    if (v.is_none()) continue;
    if (!elem_scalar_fits(v, dtype)) {
      return ctx.fail(Error::InvalidProgram, "%s %g does not fit the result dtype %s", names[i - 1],
                      v.to_double(), scalar_type_name(dtype));
    }
  }
  return Error::Ok;
}

}  // namespace

Error clamp_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 4));
  const EValue* operands[3] = {args[0]};
  int n = 1;
  for (size_t i = 1; i <= 2; ++i) {
    if (args[i]->is_none()) continue;
    TERN_CHECK_OK(expect_scalar(ctx, args, i, i == 1 ? "min" : "max"));
    operands[n++] = args[i];
  }
  if (n == 1)
    return ctx.fail(Error::InvalidProgram, "at least one of min and max must not be None");
  const ScalarType common = result_type(operands, n);
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", common));
  TERN_CHECK_OK(expect_bounds(ctx, args, common));
  RunFn run = select_real<ClampKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
