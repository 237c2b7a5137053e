// aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None,
//                Device? device=None, bool? pin_memory=None, bool non_blocking=False,
//                MemoryFormat? memory_format=None) -> Tensor
// args: [self, dtype, layout, device, pin_memory, non_blocking, memory_format, out]
//
// A copy, converting to `dtype` when given (see select_convert for the
// conversion rules and dtypes). layout, device, pin_memory, non_blocking and
// memory_format mean nothing to a CPU runtime with contiguous tensors and are
// ignored.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct ToCopyState {
  ConvertFn convert;
};

Error to_copy_convert_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  static_cast<const ToCopyState*>(ctx.state())->convert(self.data, args[7]->tensor.data,
                                                         self.numel);
  return Error::Ok;
}

}  // namespace

Error to_copy_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[7]->tensor;
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[1], "dtype", self.dtype, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", self.sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", dtype));
  if (dtype == self.dtype) {
    ctx.set_run(copy_run<7>);
    return Error::Ok;
  }
  ToCopyState state{select_convert(self.dtype, dtype)};
  if (state.convert == nullptr) {
    return ctx.fail(Error::OperatorMissing, "unsupported conversion %s -> %s",
                    scalar_type_name(self.dtype), scalar_type_name(dtype));
  }
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(to_copy_convert_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
