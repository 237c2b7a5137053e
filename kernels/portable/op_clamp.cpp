// aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
// aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor
// args: [self, min, max, out]. out = min(max(self, min), max), with a None
// bound left out, computed in torch.result_type(self, min, max) (an int
// tensor clamped to 0.5 gives float32; a bool tensor clamped to ints gives
// int64). As in torch: min > max gives max everywhere, a NaN in self stays
// NaN, and a NaN bound gives NaN everywhere. Float and integer results; no
// bool result (torch has none); a bound must fit the result dtype (torch
// wraps -1 to 255 for uint8; Tern rejects it, as hardtanh does).
//
// clamp.Tensor broadcasts self and the bound tensors together (out takes the
// broadcast shape) and goes element by element: a NaN in either bound gives
// NaN at that element. With one bound it is torch's maximum (min given) or
// minimum (max given), so a bool result is allowed there; with both bounds,
// as for clamp, it is not.
//
// The exporter's lower_clamp pass turns floating clamps with number bounds
// into aten::hardtanh, so in exported files this kernel mostly sees integers.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

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
  if constexpr (kIsFloat<T>) return upper ? L::infinity() : T(-L::infinity());
  return upper ? L::max() : L::lowest();
}

struct ClampKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const ClampOp<T> op{clamp_bound<T>(*args[1], false), clamp_bound<T>(*args[2], true)};
    const Tensor& out = args[3]->tensor;
    if constexpr (kIsFloat<T>) {
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

// clamp.Tensor: out = self clamped to the broadcast bound tensors.
template <typename T>
bool is_nan(T x) {
  return x != x;  // false for integers and bool
}

template <typename T>
T nan_or_zero() {
  if constexpr (kIsFloat<T>) return std::numeric_limits<T>::quiet_NaN();
  return T(0);
}

struct ClampTensorKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const Tensor& out = args[3]->tensor;
    const ElemInput x = elem_input(*args[0]);
    if (args[2]->is_none()) {
      broadcast_binary<T, T>(out, x, elem_input(*args[1]), [](T v, T lo) {
        return is_nan(lo) ? nan_or_zero<T>() : v < lo ? lo : v;
      });
    } else if (args[1]->is_none()) {
      broadcast_binary<T, T>(out, x, elem_input(*args[2]), [](T v, T hi) {
        return is_nan(hi) ? nan_or_zero<T>() : v > hi ? hi : v;
      });
    } else {
      broadcast_ternary<T, T, T>(out, x, elem_input(*args[1]), elem_input(*args[2]),
                                 [](T v, T lo, T hi) {
                                   if (is_nan(lo) || is_nan(hi)) return nan_or_zero<T>();
                                   return ClampOp<T>{lo, hi}(v);
                                 });
    }
    return Error::Ok;
  }
};

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

Error clamp_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(expect_elem_operand(ctx, args, 0, "self", false));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const char* const all_names[3] = {"self", "min", "max"};
  const EValue* operands[3] = {args[0]};
  ElemInput inputs[3] = {elem_input(*args[0])};
  const char* names[3] = {"self"};
  int n = 1;
  for (size_t i = 1; i <= 2; ++i) {
    if (args[i]->is_none()) continue;
    TERN_CHECK_OK(expect_elem_operand(ctx, args, i, all_names[i], true));
    operands[n] = args[i], inputs[n] = elem_input(*args[i]), names[n] = all_names[i];
    ++n;
  }
  if (n == 1) {
    return ctx.fail(Error::InvalidProgram, "at least one of min and max must not be None");
  }
  const Tensor& out = args[3]->tensor;
  TERN_CHECK_OK(expect_broadcast(ctx, inputs, names, n, out));
  const ScalarType common = result_type(operands, n);
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", common));
  RunFn run = n == 3 ? select_real<ClampTensorKernel>(common) : select_all<ClampTensorKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
