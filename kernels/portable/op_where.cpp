// aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
// args: [condition, self, other, out]. out = condition ? self : other, all
// three broadcast; out's dtype is torch.result_type(self, other). condition
// is bool (or uint8, which torch still accepts with a deprecation warning).
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct WhereOp {
  T operator()(bool c, T a, T b) const { return c ? a : b; }
};

struct WhereKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_ternary<bool, T, T>(args[3]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                                  elem_input(*args[2]), WhereOp<T>());
    return Error::Ok;
  }
};

}  // namespace

Error where_self_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(expect_elem_operand(ctx, args, 1, "self", true));
  TERN_CHECK_OK(expect_elem_operand(ctx, args, 2, "other", true));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const ScalarType cond = args[0]->tensor.dtype;
  if (cond != ScalarType::Bool && cond != ScalarType::UInt8) {
    return ctx.fail(Error::InvalidProgram, "condition must be bool, got %s",
                    scalar_type_name(cond));
  }
  const ElemInput inputs[3] = {elem_input(*args[0]), elem_input(*args[1]), elem_input(*args[2])};
  const char* const names[3] = {"condition", "self", "other"};
  TERN_CHECK_OK(expect_broadcast(ctx, inputs, names, 3, args[3]->tensor));
  const ScalarType result = result_type(args.data() + 1, 2);
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", result));
  RunFn run = select_all<WhereKernel>(result);
  if (run == nullptr) return fail_dtype(ctx, "out", result);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
