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
  // Every integer type compares exactly as int64, so four instantiations
  // cover all dtypes (one per integer type would triple the code size).
  switch (common) {
    case ScalarType::Float32: ctx.set_run(CompareKernel<Op>::template run<float>); break;
    case ScalarType::Float64: ctx.set_run(CompareKernel<Op>::template run<double>); break;
    case ScalarType::Bool: ctx.set_run(CompareKernel<Op>::template run<bool>); break;
    case ScalarType::Int8:
    case ScalarType::UInt8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64: ctx.set_run(CompareKernel<Op>::template run<int64_t>); break;
    default: return fail_dtype(ctx, "self", common);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
