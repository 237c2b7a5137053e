// aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
// aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
// aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor
// args: [self, exponent, out]. out = self ** exponent, broadcast, computed in
// torch.result_type(self, exponent) (so torch.square(bool) is int64 and
// int ** 0.5 is float32). Float and integer results; no bool result.
//
// Floating: std::pow, except the exponents ATen special-cases for a Scalar
// exponent (2, 3, -2: products; 0.5: sqrt; -0.5: 1/sqrt; -1: 1/x), which also
// fixes the edge values: (-0) ** 0.5 = -0 and (-inf) ** 0.5 = NaN, as torch.
// Integers: exact, wrapping on overflow like torch's. A negative integer
// exponent is rejected at load for a Scalar exponent (as torch); in a tensor
// it gives ATen's values: 1 ** -n = 1, (-1) ** -n = +-1, anything else 0.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

// base ** e for integers by repeated squaring; e >= 0.
template <typename T>
T pow_int_nonneg(T base, T e) {
  T result = 1;
  while (e != 0) {
    if (e & 1) result = wrap_mul(result, base);
    e = static_cast<T>(e >> 1);
    base = wrap_mul(base, base);
  }
  return result;
}

template <typename T>
T pow_elem(T base, T e) {
  if constexpr (kIsFloat<T>) {
    return std::pow(base, e);
  } else {
    if constexpr (std::is_signed<T>::value) {
      if (e < 0) {
        if (base == 1) return 1;
        if (base == -1) return (e & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    return pow_int_nonneg(base, e);
  }
}

// Floating self ** Scalar e, with ATen's special cases.
template <typename T>
void pow_float_scalar(const Tensor& x, T e, T* o) {
  if (e == T(2)) return unary_map<T>(x, o, [](T b) { return b * b; });
  if (e == T(3)) return unary_map<T>(x, o, [](T b) { return b * b * b; });
  if (e == T(-2)) return unary_map<T>(x, o, [](T b) { return T(1) / (b * b); });
  if (e == T(0.5)) return unary_map<T>(x, o, [](T b) { return std::sqrt(b); });
  if (e == T(-0.5)) return unary_map<T>(x, o, [](T b) { return T(1) / std::sqrt(b); });
  if (e == T(-1)) return unary_map<T>(x, o, [](T b) { return T(1) / b; });
  unary_map<T>(x, o, [e](T b) { return std::pow(b, e); });
}

struct PowTensorScalarKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const T e = elem_scalar<T>(*args[1]);
    T* o = args[2]->tensor.data_as<T>();
    if constexpr (kIsFloat<T>) {
      pow_float_scalar<T>(args[0]->tensor, e, o);
    } else {
      unary_map<T>(args[0]->tensor, o, [e](T b) { return pow_int_nonneg(b, e); });
    }
    return Error::Ok;
  }
};

struct PowBroadcastKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, T>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                           [](T a, T b) { return pow_elem(a, b); });
    return Error::Ok;
  }
};

// The result dtype and out checks shared by the three overloads.
Error pow_check_out(PrepareContext& ctx, Span<EValue* const> args, ScalarType common) {
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  if (common == ScalarType::Bool) return fail_dtype(ctx, "pow result", common);
  return Error::Ok;
}

}  // namespace

Error pow_tensor_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, true, &common));
  TERN_CHECK_OK(pow_check_out(ctx, args, common));
  const EValue& e = *args[1];
  if (!scalar_type_is_floating(common)) {
    if (e.is_int() && e.i < 0) {
      return ctx.fail(Error::InvalidProgram,
                      "exponent %lld: integers to negative integer powers are not allowed",
                      (long long)e.i);
    }
    if (!elem_scalar_fits(e, common)) {
      return ctx.fail(Error::InvalidProgram, "exponent %g does not fit %s", e.to_double(),
                      scalar_type_name(common));
    }
  }
  RunFn run = select_real<PowTensorScalarKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

Error pow_tensor_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, false, &common));
  TERN_CHECK_OK(pow_check_out(ctx, args, common));
  RunFn run = select_real<PowBroadcastKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

Error pow_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(expect_scalar(ctx, args, 0, "self"));
  TERN_CHECK_OK(expect_elem_operand(ctx, args, 1, "exponent", false));
  return pow_tensor_tensor_prepare(ctx, args);
}

}  // namespace portable
}  // namespace tern
