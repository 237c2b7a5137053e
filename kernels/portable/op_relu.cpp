// aten::relu(Tensor self) -> Tensor
// args: [self, out]
#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
Error relu_run(RunContext&, EValue* const* args) {
  const Tensor& x = args[0]->tensor;
  Tensor& y = args[1]->tensor;
  const T* in = x.data_as<T>();
  T* out = y.data_as<T>();
  // "< 0 ? 0 : x", not "> 0 ? x : 0": NaN fails every comparison and must
  // pass through, as in torch (relu is clamp_min(x, 0)).
  for (int64_t i = 0; i < x.numel; ++i) out[i] = in[i] < T(0) ? T(0) : in[i];
  return Error::Ok;
}

}  // namespace

Error relu_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(expect_same_shape(ctx, args[0]->tensor, args[1]->tensor, "self", "out"));
  switch (args[0]->tensor.dtype) {
    case ScalarType::Float32: ctx.set_run(relu_run<float>); break;
    case ScalarType::Float16: ctx.set_run(relu_run<Half>); break;
    case ScalarType::BFloat16: ctx.set_run(relu_run<BFloat16>); break;
    case ScalarType::Int32: ctx.set_run(relu_run<int32_t>); break;
    case ScalarType::Int64: ctx.set_run(relu_run<int64_t>); break;
    default: return fail_dtype(ctx, "self", args[0]->tensor.dtype);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
