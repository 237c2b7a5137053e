// aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
// args: [self, min_val, max_val, out]. out = min(max(self, min_val), max_val)
// in self's dtype (the limits cast to it, as torch's clamp does); NaN stays NaN.
// float32/float64 and integers; uint8 only with non-negative limits; no bool.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct HardtanhOp {
  T lo, hi;
  T operator()(T x) const {
    T y = x < lo ? lo : x;  // comparisons are false for NaN: NaN passes through
    return y > hi ? hi : y;
  }
};

struct HardtanhKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const HardtanhOp<T> op{elem_scalar<T>(*args[1]), elem_scalar<T>(*args[2])};
    unary_map<T>(args[0]->tensor, args[3]->tensor.data_as<T>(), op);
    return Error::Ok;
  }
};

}  // namespace

Error hardtanh_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 4));
  TERN_CHECK_OK(expect_scalar(ctx, args, 1, "min_val"));
  TERN_CHECK_OK(expect_scalar(ctx, args, 2, "max_val"));
  const ScalarType dtype = args[0]->tensor.dtype;
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", dtype));
  if (dtype == ScalarType::UInt8 && (args[1]->to_double() < 0 || args[2]->to_double() < 0)) {
    return ctx.fail(Error::InvalidProgram, "hardtanh on uint8 with negative limits");
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!elem_scalar_fits(*args[i], dtype)) {
      return ctx.fail(Error::InvalidProgram, "%s %g does not fit %s", i == 1 ? "min_val" : "max_val",
                      args[i]->to_double(), scalar_type_name(dtype));
    }
  }
  RunFn run = select_real<HardtanhKernel>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
