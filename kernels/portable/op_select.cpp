// aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
// args: [self, dim, index, out]
//
// out = self[..., index, ...] along dim (dim removed). A negative index counts
// from the end; the index is static, so out of range fails at load.
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct SelectState {
  int32_t dim;
  int64_t index;  // normalized to [0, size(dim))
};

Error select_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[3]->tensor;
  const auto* state = static_cast<const SelectState*>(ctx.state());
  StridedView view;
  for (int k = 0; k < self.dim; ++k) {
    if (k == state->dim) continue;
    view.sizes[view.dim] = self.sizes[k];
    view.strides[view.dim] = self.stride(k);
    ++view.dim;
  }
  const size_t elem = scalar_type_size(self.dtype);
  const int64_t offset = state->index * self.stride(state->dim);
  copy_strided(out.data, static_cast<const uint8_t*>(self.data) + offset * elem, elem, view);
  return Error::Ok;
}

}  // namespace

Error select_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  if (self.dim == 0) return ctx.fail(Error::InvalidProgram, "cannot select from a 0-d tensor");
  SelectState state;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, self.dim, "dim", &state.dim));
  const int64_t size = self.sizes[state.dim];
  const int64_t index = args[2]->i;
  if (index < -size || index >= size) {
    return ctx.fail(Error::InvalidProgram, "index %lld out of range for dim %d of size %lld",
                    (long long)index, state.dim, (long long)size);
  }
  state.index = index < 0 ? index + size : index;
  int64_t sizes[kMaxDims];
  int n = 0;
  for (int k = 0; k < self.dim; ++k) {
    if (k != state.dim) sizes[n++] = self.sizes[k];
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[3]->tensor, "out", sizes, n));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", self.dtype));
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(select_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
