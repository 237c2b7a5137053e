// aten::flip(Tensor self, int[] dims) -> Tensor
// args: [self, dims, out]
//
// out = self with the order of elements reversed along each listed dim: a
// strided read of self with negative strides on those dims (see
// copy_strided), written contiguous. Any dtype; negative dims count from the
// end; a dim listed twice is an error, as in torch.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct FlipState {
  bool flipped[kMaxDims];
};

Error flip_run(RunContext& ctx, EValue* const* args) {
  FlipState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  if (self.numel == 0) return Error::Ok;
  StridedView view;
  view.dim = self.dim;
  int64_t first = 0;  // the element of self that goes first
  for (int k = 0; k < self.dim; ++k) {
    view.sizes[k] = self.sizes[k];
    view.strides[k] = st.flipped[k] ? -self.stride(k) : self.stride(k);
    if (st.flipped[k]) first += (self.sizes[k] - 1) * self.stride(k);
  }
  const size_t elem = scalar_type_size(self.dtype);
  copy_strided(args[2]->tensor.data, static_cast<const uint8_t*>(self.data) + first * elem, elem, view);
  return Error::Ok;
}

}  // namespace

Error flip_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  FlipState st{};
  for (int64_t d : args[1]->ints) {
    int k = 0;
    TERN_CHECK_OK(normalize_dim(ctx, d, self.dim, "dims entry", &k));
    if (st.flipped[k]) return ctx.fail(Error::InvalidProgram, "dim %d appears more than once in dims", k);
    st.flipped[k] = true;
  }
  TERN_CHECK_OK(expect_same_shape(ctx, args[2]->tensor, self, "out", "self"));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(flip_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
