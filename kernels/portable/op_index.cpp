// aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
// args: [self, indices, out]   (indices: an OptionalTensorList)
//
// Advanced indexing with ONE integer index tensor: x[idx], x[:, idx],
// x[..., idx] give indices = [None] * k + [idx]. out = self with dim k
// replaced by idx's dims: out[a, i..., b] = self[a, idx[i...], b]. Any dtype
// for self; idx int64 or int32, negative entries count from the end; an entry
// outside [-size, size) fails at run (ExecutionFailed). Other forms (several
// index tensors, boolean masks) are OperatorMissing at load.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

struct IndexState {
  int64_t outer, n, inner;  // self as [outer, n, inner] around the indexed dim
  int32_t k;                // position of the index tensor in indices
};

Error index_run(RunContext& ctx, EValue* const* args) {
  IndexState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = *args[1]->tensors[st.k];
  const int64_t bad = gather_slices(args[2]->tensor.data, self.data, scalar_type_size(self.dtype),
                                    st.outer, st.n, st.inner, index, /*wrap=*/true);
  if (bad >= 0) {
    TERN_LOG_ERROR("aten::index.Tensor: index %lld at position %lld is out of range for size %lld",
                   (long long)index_at(index, bad), (long long)bad, (long long)st.n);
    return Error::ExecutionFailed;
  }
  return Error::Ok;
}

// The one non-None entry of indices: its position, checked to be an int64 or
// int32 tensor.
Error find_index(PrepareContext& ctx, Span<Tensor* const> indices, int self_dim, int32_t* k) {
  if (indices.empty() || indices.size() > static_cast<size_t>(self_dim)) {
    return ctx.fail(Error::InvalidProgram, "indices has %zu entries for a %d-d self",
                    indices.size(), self_dim);
  }
  int found = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] != nullptr) {
      *k = static_cast<int32_t>(i);
      ++found;
    }
  }
  if (found != 1) {
    return ctx.fail(Error::OperatorMissing,
                    "only indexing with exactly one index tensor is supported, got %d", found);
  }
  const ScalarType t = indices[*k]->dtype;
  if (t == ScalarType::Bool || t == ScalarType::UInt8) {
    return ctx.fail(Error::OperatorMissing, "boolean mask indices are not supported");
  }
  if (t != ScalarType::Int64 && t != ScalarType::Int32) return fail_dtype(ctx, "indices", t);
  return Error::Ok;
}

}  // namespace

Error index_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::OptionalTensorList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  IndexState st{1, 1, 1, 0};
  TERN_CHECK_OK(find_index(ctx, args[1]->tensors, self.dim, &st.k));
  const Tensor& index = *args[1]->tensors[st.k];
  if (self.dim - 1 + index.dim > kMaxDims) {
    return ctx.fail(Error::InvalidProgram, "the result would have more than %d dims", kMaxDims);
  }
  int64_t sizes[kMaxDims];
  int rank = 0;
  for (int d = 0; d < self.dim; ++d) {
    if (d == st.k) {
      for (int j = 0; j < index.dim; ++j) sizes[rank++] = index.sizes[j];
      st.n = self.sizes[d];
      continue;
    }
    sizes[rank++] = self.sizes[d];
    (d < st.k ? st.outer : st.inner) *= self.sizes[d];
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", sizes, rank));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  memcpy(ctx.state(), &st, sizeof(st));
  ctx.set_run(index_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
