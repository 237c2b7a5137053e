// aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)
// args: [self, dims, out]
//
// out[i_0, ..., i_{n-1}] = self[j] with j[dims[k]] = i_k: a strided read of
// self, written contiguous (see copy_strided for the inner loops).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct PermuteState {
  int8_t dims[kMaxDims];  // normalized: out dim k is self dim dims[k]
};
static_assert(sizeof(PermuteState) <= PrepareContext::kStateBytes, "state too large");

Error permute_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[2]->tensor;
  const auto* state = static_cast<const PermuteState*>(ctx.state());
  StridedView view;
  view.dim = self.dim;
  for (int k = 0; k < self.dim; ++k) {
    view.sizes[k] = self.sizes[state->dims[k]];
    view.strides[k] = self.stride(state->dims[k]);
  }
  copy_strided(out.data, self.data, scalar_type_size(self.dtype), view);
  return Error::Ok;
}

}  // namespace

Error permute_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  Span<const int64_t> dims = args[1]->ints;
  if (dims.size() != static_cast<size_t>(self.dim)) {
    return ctx.fail(Error::InvalidProgram, "dims has %zu entries for a %d-d self", dims.size(),
                    self.dim);
  }
  PermuteState state;
  bool seen[kMaxDims] = {};
  int64_t sizes[kMaxDims];
  for (int k = 0; k < self.dim; ++k) {
    int d = 0;
    TERN_CHECK_OK(normalize_dim(ctx, dims[k], self.dim, "dims entry", &d));
    if (seen[d]) return ctx.fail(Error::InvalidProgram, "dim %d repeats in dims", d);
    seen[d] = true;
    state.dims[k] = static_cast<int8_t>(d);
    sizes[k] = self.sizes[d];
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(permute_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
