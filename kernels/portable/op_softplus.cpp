// aten::softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor
// args: [self, beta, threshold, out].
//   out = self * beta > threshold ? self : log(1 + exp(self * beta)) / beta
// in self's dtype; float32/float64 only (torch has no integer softplus).
// beta = 0 is rejected at load (torch divides by it and returns inf).
// (Without this kernel torch.export decomposes softplus into exp, log1p, gt
// and where.)
#include <cmath>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct SoftplusOp {
  T beta, threshold;
  // Above the threshold log1p(exp(bx)) / b == x to within rounding; the
  // test also keeps exp from overflowing.
  T operator()(T x) const {
    using M = OpMath<T>;  // float for the 16-bit types: one rounding
    const M bx = M(x) * M(beta);
    return bx > M(threshold) ? M(x) : std::log1p(std::exp(bx)) / M(beta);
  }
};

struct SoftplusKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const SoftplusOp<T> op{elem_scalar<T>(*args[1]), elem_scalar<T>(*args[2])};
    unary_map<T>(args[0]->tensor, args[3]->tensor.data_as<T>(), op);
    return Error::Ok;
  }
};

}  // namespace

Error softplus_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 4));
  TERN_CHECK_OK(expect_scalar(ctx, args, 1, "beta"));
  TERN_CHECK_OK(expect_scalar(ctx, args, 2, "threshold"));
  const ScalarType dtype = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", dtype));
  RunFn run = select_floating<SoftplusKernel>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  // Checked in self's dtype: a tiny double beta may still be 0 as float32.
  const bool zero = dtype == ScalarType::Float32 ? elem_scalar<float>(*args[1]) == 0.0f
                                                 : elem_scalar<double>(*args[1]) == 0.0;
  if (zero) return ctx.fail(Error::InvalidProgram, "beta must not be 0 (softplus divides by it)");
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
