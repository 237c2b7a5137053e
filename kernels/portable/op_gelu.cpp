// aten::gelu(Tensor self, *, str approximate="none") -> Tensor
// args: [self, approximate, out]. float32/float64 (torch has no integer gelu).
//   "none": x/2 * (1 + erf(x / sqrt(2)))
//   "tanh": x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
#include <cmath>
#include <cstring>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
T gelu_erf(T x) {
  const T kAlpha = T(M_SQRT1_2);
  return x * T(0.5) * (T(1) + std::erf(x * kAlpha));
}

template <typename T>
T gelu_tanh(T x) {
  const T kBeta = T(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2 / pi)
  const T kKappa = T(0.044715);
  const T inner = kBeta * (x + kKappa * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}

template <bool kTanh>
struct GeluKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    T* out = args[2]->tensor.data_as<T>();
    if (kTanh) {
      unary_map<T>(args[0]->tensor, out, [](T x) { return gelu_tanh<OpMath<T>>(x); });
    } else {
      unary_map<T>(args[0]->tensor, out, [](T x) { return gelu_erf<OpMath<T>>(x); });
    }
    return Error::Ok;
  }
};

}  // namespace

Error gelu_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 3));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::String));
  const char* approximate = args[1]->str;
  const bool tanh = strcmp(approximate, "tanh") == 0;
  if (!tanh && strcmp(approximate, "none") != 0) {
    return ctx.fail(Error::InvalidProgram, "approximate must be \"none\" or \"tanh\", got \"%s\"",
                    approximate);
  }
  const ScalarType dtype = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", dtype));
  RunFn run = tanh ? select_floating<GeluKernel<true>>(dtype)
                   : select_floating<GeluKernel<false>>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
