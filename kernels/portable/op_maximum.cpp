// aten::maximum(Tensor self, Tensor other) -> Tensor
// args: [self, other, out]. out = the larger of self and other, broadcast, in
// torch.result_type(self, other); a NaN in either input gives NaN (unlike
// fmax/fmin). Every supported dtype, bool included (where it is "or").
// torch.max(a, b) with two tensors also exports as this op.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
T maximum_of(T a, T b) {
  if constexpr (kIsFloat<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a > b ? a : b;
}

struct MaximumKernel {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    broadcast_binary<T, T>(args[2]->tensor, elem_input(*args[0]), elem_input(*args[1]),
                           [](T a, T b) { return maximum_of(a, b); });
    return Error::Ok;
  }
};

}  // namespace

Error maximum_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  ScalarType common;
  TERN_CHECK_OK(prepare_binary(ctx, args, 3, false, &common));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", common));
  RunFn run = select_all<MaximumKernel>(common);
  if (run == nullptr) return fail_dtype(ctx, "out", common);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
