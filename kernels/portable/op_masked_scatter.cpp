// aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor
// args: [self, mask, source, out]
//
// self and the bool mask broadcast together to out's shape; out = self,
// then the out elements where mask is true, in row-major order, take the
// elements of source in order (source: self's dtype, any shape, read flat).
// Any dtype. How many elements the mask selects is data: more than
// source.numel fails at run (ExecutionFailed), as in torch.
#include <cstring>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

Error masked_scatter_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const Tensor& mask = args[1]->tensor;
  const Tensor& source = args[2]->tensor;
  Tensor& out = args[3]->tensor;
  const size_t elem = scalar_type_size(self.dtype);
  StridedView view;
  view.dim = out.dim;
  for (int k = 0; k < out.dim; ++k) view.sizes[k] = out.sizes[k];
  broadcast_strides(self, out.dim, view.strides);
  copy_strided(out.data, self.data, elem, view);
  Odometer at_mask;
  int64_t strides[kMaxDims];
  broadcast_strides(mask, out.dim, strides);
  for (int k = 0; k < out.dim; ++k) at_mask.add(out.sizes[k], strides[k]);
  const auto* m = static_cast<const uint8_t*>(mask.data);  // bool as bytes: nonzero is true
  const auto* src = static_cast<const uint8_t*>(source.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  int64_t taken = 0;
  for (int64_t i = 0; i < out.numel; ++i, at_mask.next()) {
    if (m[at_mask.offset] == 0) continue;
    if (taken == source.numel) {
      TERN_LOG_ERROR("aten::masked_scatter: mask selects more than the %lld elements of source",
                     (long long)source.numel);
      return Error::ExecutionFailed;
    }
    memmove(dst + i * elem, src + taken++ * elem, elem);
  }
  return Error::Ok;
}

}  // namespace

Error masked_scatter_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  for (size_t i = 0; i < 4; ++i) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[3]->tensor;
  TERN_CHECK_OK(expect_dtype(ctx, args[1]->tensor, "mask", ScalarType::Bool));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "source", self.dtype));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", self.dtype));
  const ElemInput inputs[2] = {elem_input(*args[0]), elem_input(*args[1])};
  const char* const names[2] = {"self", "mask"};
  TERN_CHECK_OK(expect_broadcast(ctx, inputs, names, 2, out));
  ctx.set_run(masked_scatter_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
