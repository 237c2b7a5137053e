// aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None,
//                    SymInt step=1) -> Tensor(a)
// args: [self, dim, start, end, step, out]
//
// out = self[..., start:end:step, ...] along dim. start and end may be None,
// negative (counted from the end) or out of range (clamped), as in Python
// slicing; step must be positive.
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct SliceState {
  int32_t dim;
  int64_t start;  // clamped to [0, size(dim)]
  int64_t step;
};
static_assert(sizeof(SliceState) <= PrepareContext::kStateBytes, "state too large");

Error slice_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[5]->tensor;
  const auto* state = static_cast<const SliceState*>(ctx.state());
  StridedView view;
  view.dim = self.dim;
  for (int k = 0; k < self.dim; ++k) {
    view.sizes[k] = out.sizes[k];
    view.strides[k] = self.stride(k);
  }
  const size_t elem = scalar_type_size(self.dtype);
  const int64_t offset = out.numel == 0 ? 0 : state->start * view.strides[state->dim];
  view.strides[state->dim] *= state->step;
  copy_strided(out.data, static_cast<const uint8_t*>(self.data) + offset * elem, elem, view);
  return Error::Ok;
}

}  // namespace

Error slice_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  const Tensor& self = args[0]->tensor;
  if (self.dim == 0) return ctx.fail(Error::InvalidProgram, "cannot slice a 0-d tensor");
  SliceState state;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, self.dim, "dim", &state.dim));
  state.step = args[4]->i;
  int64_t sizes[kMaxDims];
  for (int k = 0; k < self.dim; ++k) sizes[k] = self.sizes[k];
  TERN_CHECK_OK(slice_bounds(ctx, *args[2], *args[3], &state.step, self.sizes[state.dim], &state.start,
                             &sizes[state.dim]));
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "out", self.dtype));
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(slice_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
