// aten::eq.Scalar(Tensor self, Scalar other) -> Tensor
// aten::eq.Tensor(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out (bool) = self == other, broadcast, compared
// in torch.result_type(self, other) (so int 2 == 2.5 is false).
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct EqOp {
  bool operator()(T a, T b) const { return a == b; }
};

struct EqKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, bool>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                              EqOp<T>());
    return Error::Ok;
  }
};

Error eq_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", ScalarType::Bool));
  RunFn run = select_all<EqKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "self", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error eq_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return eq_prepare(ctx, args, true);
}

Error eq_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return eq_prepare(ctx, args, false);
}

}  // namespace portable
}  // namespace tern
