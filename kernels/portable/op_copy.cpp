// aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor
// args: [self, src, non_blocking, out]
//
// The functional form of self.copy_(src): out has self's shape and dtype and
// holds src broadcast to that shape and converted to that dtype (see
// select_convert for the conversion rules); self's values are not read.
// Any dtype. non_blocking means nothing to a CPU runtime.
#include <cstring>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct CopyState {
  ConvertFn convert;  // src dtype -> self dtype
};

Error copy_same_dtype_run(RunContext&, EValue* const* args) {
  const Tensor& src = args[1]->tensor;
  Tensor& out = args[3]->tensor;
  StridedView view;  // src broadcast to out
  view.dim = out.dim;
  for (int k = 0; k < out.dim; ++k) view.sizes[k] = out.sizes[k];
  broadcast_strides(src, out.dim, view.strides);
  copy_strided(out.data, src.data, scalar_type_size(src.dtype), view);
  return Error::Ok;
}

Error copy_convert_run(RunContext& ctx, EValue* const* args) {
  CopyState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& src = args[1]->tensor;
  Tensor& out = args[3]->tensor;
  const ElemInput in = elem_input(*args[1]);
  BroadcastPlan p;
  broadcast_plan_init(&p, out, &in, 1);
  const size_t src_elem = scalar_type_size(src.dtype), out_elem = scalar_type_size(out.dtype);
  const auto* s = static_cast<const uint8_t*>(src.data);
  auto* d = static_cast<uint8_t*>(out.data);
  broadcast_for_each_row(p, [&](int64_t out_offset, const int64_t* offsets, int64_t n) {
    uint8_t* row = d + out_offset * out_elem;
    if (p.inner_stride(0) == 1) {
      st.convert(s + offsets[0] * src_elem, row, n);
      return;
    }
    st.convert(s + offsets[0] * src_elem, row, 1);  // one element repeated
    for (int64_t j = 1; j < n; ++j) memmove(row + j * out_elem, row, out_elem);
  });
  return Error::Ok;
}

}  // namespace

Error copy_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  const Tensor& src = args[1]->tensor;
  const Tensor& out = args[3]->tensor;
  TERN_CHECK_OK(expect_same_shape(ctx, out, self, "out", "self"));
  // src broadcasts to self's shape when the two broadcast to exactly that shape
  const ElemInput inputs[2] = {elem_input(*args[0]), elem_input(*args[1])};
  const char* const names[2] = {"self", "src"};
  TERN_CHECK_OK(expect_broadcast(ctx, inputs, names, 2, out));
  if (src.dtype == self.dtype) {
    ctx.set_run(copy_same_dtype_run);
    return Error::Ok;
  }
  CopyState st{select_convert(src.dtype, self.dtype)};
  if (st.convert == nullptr) {
    return ctx.fail(Error::OperatorMissing, "unsupported conversion of src %s to self %s",
                    scalar_type_name(src.dtype), scalar_type_name(self.dtype));
  }
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(copy_convert_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
