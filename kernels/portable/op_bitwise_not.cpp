// aten::bitwise_not(Tensor self) -> Tensor
// args: [self, out]. out = ~self in self's dtype, for bool (logical not) and
// the integer types; floating dtypes are rejected, as torch does.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

struct BitwiseNot {
  template <typename T>
  static Error run(RunContext&, EValue* const* args) {
    if constexpr (std::is_same_v<T, bool>) {
      unary_map<bool>(args[0]->tensor, args[1]->tensor.data_as<bool>(), [](bool x) { return !x; });
    } else if constexpr (std::is_integral_v<T>) {
      unary_map<T>(args[0]->tensor, args[1]->tensor.data_as<T>(), [](T x) { return static_cast<T>(~x); });
    }
    return Error::Ok;
  }
};

}  // namespace

Error bitwise_not_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_unary(ctx, args, 2));
  const ScalarType self = args[0]->tensor.dtype;
  if (scalar_type_is_floating(self)) return fail_dtype(ctx, "self", self);
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "out", self));
  RunFn run = select_all<BitwiseNot>(self);
  if (run == nullptr) return fail_dtype(ctx, "self", self);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
