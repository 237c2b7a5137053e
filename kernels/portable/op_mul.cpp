// aten::mul.Tensor(Tensor self, Tensor other) -> Tensor
// aten::mul.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out]. out = self * other, broadcast, computed in out's
// dtype (torch.result_type(self, other)); bool is "and".
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
struct MulOp {
  T operator()(T a, T b) const { return wrap_mul(a, b); }
};

template <>
struct MulOp<bool> {
  bool operator()(bool a, bool b) const { return a && b; }
};

struct MulKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, T>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                           MulOp<T>());
    return Error::Ok;
  }
};

Error mul_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  RunFn run = select_all<MulKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error mul_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return mul_prepare(ctx, args, false);
}

Error mul_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return mul_prepare(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
