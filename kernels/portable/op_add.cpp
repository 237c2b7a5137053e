// aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
// args: [self, other, alpha, out]. out = self + alpha * other, broadcast,
// computed in out's dtype (torch.result_type(self, other)); bool is "or".
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct AddOp {
  T alpha;
  T operator()(T a, T b) const { return wrap_add(a, wrap_mul(alpha, b)); }
};

template <>
struct AddOp<bool> {
  bool alpha;
  bool operator()(bool a, bool b) const { return a || (alpha && b); }
};

struct AddKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    const AddOp<T> op{elem_scalar<T>(*args[2])};
    broadcast_binary<T, T>(args[3]->tensor, elem_input(*args[0]), elem_input(*args[1]), op);
    return Error::Ok;
  }
};

Error add_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 4, scalar_other, &common));
  TERN_CHECK_OK(expect_scalar(ctx, args, 2, "alpha"));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", common));
  TERN_CHECK_OK(expect_alpha(ctx, *args[2], common));
  RunFn run = select_all<AddKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error add_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return add_prepare(ctx, args, false);
}

Error add_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return add_prepare(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
