// aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor
// args: [self, alpha, scale, input_scale, out].
//   out = self > 0 ? scale * self : scale * alpha * (exp(self * input_scale) - 1)
// in self's dtype; float32/float64 only (torch has no integer elu). F.selu
// reaches this kernel too: torch decomposes it into elu with alpha 1.6732...
// and scale 1.0507....
#include <cmath>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct EluOp {
  T neg_coef;  // alpha * scale
  T pos_coef;  // scale
  T input_scale;
  // expm1 keeps small negative inputs accurate; NaN fails `x <= 0` and
  // stays NaN.
  T operator()(T x) const {
    return x <= T(0) ? std::expm1(x * input_scale) * neg_coef : x * pos_coef;
  }
};

struct EluKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const T alpha = elem_scalar<T>(*args[1]), scale = elem_scalar<T>(*args[2]);
    const EluOp<T> op{alpha * scale, scale, elem_scalar<T>(*args[3])};
    unary_map<T>(args[0]->tensor, args[4]->tensor.data_as<T>(), op);
    return Error::Ok;
  }
};

}  // namespace

Error elu_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 5));
  TERN_CHECK_OK(expect_scalar(ctx, args, 1, "alpha"));
  TERN_CHECK_OK(expect_scalar(ctx, args, 2, "scale"));
  TERN_CHECK_OK(expect_scalar(ctx, args, 3, "input_scale"));
  const ScalarType dtype = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "out", dtype));
  RunFn run = select_floating<EluKernel>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
