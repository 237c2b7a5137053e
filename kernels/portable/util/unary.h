// Shared prepare and run of the one-input math kernels (exp, log, sqrt, abs,
// floor, silu, ...): args [self, out], out = F(self) elementwise. Each op file
// supplies only its scalar function and the dtype rule torch applies to it:
//
//   // op_exp.cpp
//   struct Exp {
//     template <typename T>
//     static T apply(T x) { return std::exp(x); }
//   };
//   Error exp_prepare(PrepareContext& ctx, Span<EValue* const> args) {
//     return unary_prepare<UnaryDtypes::kFloatPromote, Exp>(ctx, args);
//   }
//
// prepare checks the argument count, self's dtype and out's sizes and dtype,
// and picks the run function for the dtype; run is unary_map (elementwise.h).
// Only the C++ types a rule allows are instantiated.
#pragma once

#include <cstring>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {

// Which dtypes an op takes, and the dtype of its out.
enum class UnaryDtypes {
  // Any dtype; integer and bool inputs give float32 (torch's int-to-float
  // promotion: exp, log, sin, ...). F::apply<float|double> (float for the
  // 16-bit types, rounded once).
  kFloatPromote,
  // The floating dtypes only, out in self's dtype (silu, mish). F::apply<float|double>.
  kFloatOnly,
  // The floating and integer types (not bool), out in self's dtype
  // (abs, neg). F::apply<T> for every one of them.
  kReal,
  // As kReal, but F is the identity on integers, so an integer tensor is
  // copied byte for byte (floor, ceil, round). F::apply<float|double>.
  kRealIdentityOnIntegers,
  // Every dtype, bool included, out in self's dtype (sign). F::apply<T> for
  // every one of them.
  kAll,
  // Any dtype in, bool out: F::apply<float|double> returns bool; integer and
  // bool inputs give false everywhere, since they hold no NaN or infinity
  // (isnan, isinf).
  kFloatTest,
};

// R: the out's C++ type; void for self's (T).
template <typename F, typename R = void>
struct UnaryKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    using Out = std::conditional_t<std::is_void_v<R>, T, R>;
    // The 16-bit types compute F::apply<float> and round once (half.h).
    unary_map<T>(args[0]->tensor, args[1]->tensor.data_as<Out>(), [](T x) { return F::apply(OpMath<T>(x)); });
    return Error::Ok;
  }
};

// out (bool) = false everywhere.
inline Error unary_all_false_run(RunContext&, EValue* const* args) {
  const Tensor& out = args[1]->tensor;
  if (out.numel > 0) memset(out.data, 0, static_cast<size_t>(out.numel));
  return Error::Ok;
}

// prepare of aten::<op>(Tensor self) -> Tensor with args [self, out].
template <UnaryDtypes kDtypes, typename F>
Error unary_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 2));
  const ScalarType self = args[0]->tensor.dtype;
  constexpr bool kPromote = kDtypes == UnaryDtypes::kFloatPromote;
  constexpr bool kTest = kDtypes == UnaryDtypes::kFloatTest;
  const ScalarType result = kPromote ? unary_float_result(self) : kTest ? ScalarType::Bool : self;
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "out", result));
  RunFn run = nullptr;
  if constexpr (kDtypes == UnaryDtypes::kReal) {
    run = select_real<UnaryKernel<F>>(self);
  } else if constexpr (kDtypes == UnaryDtypes::kRealIdentityOnIntegers) {
    const bool integral = !scalar_type_is_floating(self) && self != ScalarType::Bool;
    run = integral ? copy_run<1> : select_floating<UnaryKernel<F>>(self);
  } else if constexpr (kDtypes == UnaryDtypes::kAll) {
    run = select_all<UnaryKernel<F>>(self);
  } else if constexpr (kTest) {
    run = scalar_type_is_floating(self) ? select_floating<UnaryKernel<F, bool>>(self)
                                        : unary_all_false_run;
  } else {
    run = select_floating<UnaryKernel<F>>(result);
  }
  if (run == nullptr) return fail_dtype(ctx, "self", self);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
