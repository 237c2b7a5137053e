// aten::div.Tensor(Tensor self, Tensor other) -> Tensor
// aten::div.Scalar(Tensor self, Scalar other) -> Tensor
// aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor
// aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor
// args: [self, other, out] or [self, other, rounding_mode, out].
//
// True division (no rounding_mode, or None) computes in a floating out dtype:
// the promoted dtype if floating, else float32 (int / int -> float32).
// "trunc" and "floor" keep the promoted dtype; integer division by zero is a
// data error (ExecutionFailed), as torch raises ZeroDivisionError.
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/divide.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
T div_trunc(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    // INT_MIN / -1 overflows (and traps on x86): negate with wrap-around instead.
    if constexpr (std::is_signed<T>::value) {
      if (b == T(-1)) return wrap_sub(T(0), a);
    }
    return static_cast<T>(a / b);
  } else if constexpr (kIsHalfType<T>) {
    // As eager's CPU kernel: the quotient rounded to T first, then truncated
    // (truncating the float32 quotient gives 12 where eager gives 13 for a
    // quotient of 12.99 that rounds to 13 in float16).
    return T(std::trunc(static_cast<float>(T(static_cast<float>(a) / static_cast<float>(b)))));
  } else {
    return std::trunc(a / b);
  }
}

// Python's floor division, as ATen's div_floor_floating / div_floor_integer.
template <typename T>
T div_floor(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    if constexpr (std::is_signed<T>::value) {
      if (b == T(-1)) return wrap_sub(T(0), a);
    }
    T q = static_cast<T>(a / b);
    T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else if constexpr (kIsHalfType<T>) {
    return div_floor<float>(a, b);  // in float32, rounded once
  } else {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T floordiv = std::floor(div);
    return div - floordiv > T(0.5) ? floordiv + T(1) : floordiv;
  }
}

enum class Rounding { None, Trunc, Floor };

template <typename T, Rounding kMode>
struct DivOp {
  T operator()(T a, T b) const {
    if constexpr (kMode == Rounding::Trunc) return div_trunc(a, b);
    if constexpr (kMode == Rounding::Floor) return div_floor(a, b);
    return a / b;
  }
};

// kOut: index of out in args.
template <Rounding kMode, int kOut>
struct DivKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const ElemInput a = elem_input(*args[0]), b = elem_input(*args[1]);
    return broadcast_divide<T>("aten::div", args[kOut]->tensor, a, b, DivOp<T, kMode>());
  }
};

// True division with out at args[num_args - 1].
Error div_true_prepare(PrepareContext& ctx, Span<EValue* const> args, size_t num_args,
                       bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, num_args, scalar_other, &common));
  const ScalarType result = scalar_type_is_floating(common) ? common : ScalarType::Float32;
  TERN_CHECK_OK(expect_dtype(ctx, args[num_args - 1]->tensor, "out", result));
  RunFn run = num_args == 3 ? select_floating<DivKernel<Rounding::None, 2>>(result)
                            : select_floating<DivKernel<Rounding::None, 3>>(result);
  if (run == nullptr) return fail_dtype(ctx, "out", result);
  ctx.set_run(run);
  return Error::Ok;
}

// args [self, other, rounding_mode, out]; other a Scalar with scalar_other.
Error div_mode_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  if (args[2]->is_none()) return div_true_prepare(ctx, args, 4, scalar_other);
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::String));
  const char* mode = args[2]->str;
  const bool trunc = strcmp(mode, "trunc") == 0;
  if (!trunc && strcmp(mode, "floor") != 0) {
    return ctx.fail(Error::InvalidProgram,
                    "rounding_mode must be None, \"trunc\" or \"floor\", got \"%s\"", mode);
  }
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 4, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", common));
  RunFn run = trunc ? select_real<DivKernel<Rounding::Trunc, 3>>(common)
                    : select_real<DivKernel<Rounding::Floor, 3>>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error div_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return div_true_prepare(ctx, args, 3, false);
}

Error div_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return div_true_prepare(ctx, args, 3, true);
}

Error div_tensor_mode_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return div_mode_prepare(ctx, args, false);
}

Error div_scalar_mode_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return div_mode_prepare(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
