// aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
// args: [self, other, alpha, out]. out = self - alpha * other, broadcast,
// computed in out's dtype. Like torch, rejects bool operands.
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct SubOp {
  T alpha;
  T operator()(T a, T b) const { return wrap_sub(a, wrap_mul(alpha, b)); }
};

struct SubKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const SubOp<T> op{elem_scalar<T>(*args[2])};
    broadcast_binary<T, T>(args[3]->tensor, elem_input(*args[0]), elem_input(*args[1]), op);
    return Error::Ok;
  }
};

bool is_bool_operand(const EValue& v) {
  return v.is_bool() || (v.is_tensor() && v.tensor.dtype == ScalarType::Bool);
}

Error sub_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 4, scalar_other, &common));
  if (is_bool_operand(*args[0]) || is_bool_operand(*args[1])) {
    return ctx.fail(Error::InvalidProgram,
                    "subtraction with a bool operand is not supported (use logical_not)");
  }
  TERN_CHECK_OK(expect_scalar(ctx, args, 2, "alpha"));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", common));
  TERN_CHECK_OK(expect_alpha(ctx, *args[2], common));
  RunFn run = select_real<SubKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error sub_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return sub_prepare(ctx, args, false);
}

Error sub_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return sub_prepare(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
