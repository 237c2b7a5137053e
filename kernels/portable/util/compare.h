// Shared body of the comparison kernels (eq, ne, lt, le, gt, ge; .Scalar and
// .Tensor overloads): args [self, other, out]; out (bool) = self OP other,
// broadcast, compared in torch.result_type(self, other) (so int 2 == 2.5 is
// false).
#pragma once

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {

template <typename Op>
struct CompareKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, bool>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                              [](T a, T b) { return Op::apply(a, b); });
    return Error::Ok;
  }
};

template <typename Op>
Error compare_prepare(PrepareContext& ctx, Span<EValue* const> args, bool scalar_other) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, scalar_other, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", ScalarType::Bool));
  // In the common dtype itself, as torch: a uint8 tensor == -1 compares with
  // 255 (the scalar wraps into uint8), which comparing as int64 would miss.
  RunFn run = select_all<CompareKernel<Op>>(common);
  if (run == nullptr) return fail_dtype(ctx, "self", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
