// aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor
// args: [self, negative_slope, out]. out = self > 0 ? self : self * negative_slope,
// in self's dtype; float32/float64 only (torch has no integer leaky_relu).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct LeakyReluOp {
  T slope;
  T operator()(T x) const { return x > T(0) ? x : T(x * slope); }  // NaN * slope stays NaN
};

struct LeakyReluKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const LeakyReluOp<T> op{elem_scalar<T>(*args[1])};
    unary_map<T>(args[0]->tensor, args[2]->tensor.data_as<T>(), op);
    return Error::Ok;
  }
};

}  // namespace

Error leaky_relu_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 3));
  TERN_CHECK_OK(expect_scalar(ctx, args, 1, "negative_slope"));
  const ScalarType dtype = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", dtype));
  RunFn run = select_floating<LeakyReluKernel>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
