// aten::index_select(Tensor self, int dim, Tensor index) -> Tensor
// args: [self, dim, index, out]
//
// out = self with dim replaced by the entries of index (1-d, or 0-d for one
// entry; int64 or int32): out[..., i, ...] = self[..., index[i], ...]. Any
// dtype (slices are copied as bytes). As in torch, an entry must lie in
// [0, size(dim)) (no negative indices); the entries are data, so one out of
// range fails at run (ExecutionFailed).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

struct IndexSelectState {
  int64_t outer, n, inner;  // self as [outer, n, inner] around dim
};

Error index_select_run(RunContext& ctx, EValue* const* args) {
  IndexSelectState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = args[2]->tensor;
  const int64_t bad = gather_slices(args[3]->tensor.data, self.data, scalar_type_size(self.dtype),
                                    st.outer, st.n, st.inner, index, /*wrap=*/false);
  if (bad >= 0) {
    const int64_t dim = args[1]->i < 0 ? args[1]->i + (self.dim > 0 ? self.dim : 1) : args[1]->i;
    TERN_LOG_ERROR("aten::index_select: index %lld is out of bounds for dimension %lld with size %lld (element "
                   "%lld of index)", (long long)index_at(index, bad), (long long)dim, (long long)st.n, (long long)bad);
    return Error::ExecutionFailed;
  }
  return Error::Ok;
}

}  // namespace

Error index_select_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = args[2]->tensor;
  if (index.dtype != ScalarType::Int64 && index.dtype != ScalarType::Int32) {
    return fail_dtype(ctx, "index", index.dtype);
  }
  if (index.dim > 1 || (self.dim == 0 && index.numel != 1)) {
    return ctx.fail(Error::InvalidProgram,
                    "index must be 1-d (one entry for a 0-d self), got %d-d with %lld entries",
                    index.dim, (long long)index.numel);
  }
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, self.dim, "dim", &dim));
  IndexSelectState st{1, 1, 1};
  int64_t sizes[kMaxDims];
  for (int k = 0; k < self.dim; ++k) {
    sizes[k] = k == dim ? index.numel : self.sizes[k];
    if (k != dim) (k < dim ? st.outer : st.inner) *= self.sizes[k];
  }
  if (self.dim > 0) st.n = self.sizes[dim];
  TERN_CHECK_OK(expect_sizes(ctx, args[3]->tensor, "out", sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", self.dtype));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(index_select_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
