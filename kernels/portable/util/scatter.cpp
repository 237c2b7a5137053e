#include "kernels/portable/util/scatter.h"

#include "kernels/portable/util/checks.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

// Size of dim k of t, a 0-d tensor counting as [1].
int64_t size_or_one(const Tensor& t, int k) { return t.dim == 0 ? 1 : t.sizes[k]; }

}  // namespace

Error expect_scatter_index(PrepareContext& ctx, Span<EValue* const> args, size_t i_dim,
                           size_t i_index, const Tensor* src, int* dim) {
  TERN_CHECK_OK(ctx.expect_tag(args, i_dim, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, i_index));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = args[i_index]->tensor;
  TERN_CHECK_OK(normalize_dim(ctx, args[i_dim]->i, self.dim, "dim", dim));
  if (index.numel == 0) return Error::Ok;  // nothing is read: torch skips the checks too
  if (index.dtype != ScalarType::Int64 && index.dtype != ScalarType::Int32) {
    return fail_dtype(ctx, "index", index.dtype);
  }
  const int rank = self.dim == 0 ? 1 : self.dim;
  if ((index.dim == 0 ? 1 : index.dim) != rank ||
      (src != nullptr && (src->dim == 0 ? 1 : src->dim) != rank)) {
    return ctx.fail(Error::InvalidProgram, "index (%d-d) and src (%d-d) must have self's %d dims",
                    index.dim, src != nullptr ? src->dim : self.dim, self.dim);
  }
  for (int k = 0; k < rank; ++k) {
    const int64_t n = size_or_one(index, k);
    if ((k != *dim && n > size_or_one(self, k)) || (src != nullptr && n > size_or_one(*src, k))) {
      return ctx.fail(Error::InvalidProgram,
                      "index size %lld in dim %d is larger than self's (apart from dim %d) or src's",
                      (long long)n, k, *dim);
    }
  }
  return Error::Ok;
}

Error expect_scatter(PrepareContext& ctx, Span<EValue* const> args, bool has_src, size_t i_out,
                     int* dim) {
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, i_out));
  const Tensor& self = args[0]->tensor;
  const Tensor* src = nullptr;
  if (has_src) {
    TERN_CHECK_OK(ctx.expect_tensor(args, 3));
    src = &args[3]->tensor;
    TERN_CHECK_OK(expect_dtype(ctx, *src, "src", self.dtype));
  }
  TERN_CHECK_OK(expect_scatter_index(ctx, args, 1, 2, src, dim));
  return expect_same_shape(ctx, args[i_out]->tensor, self, "out", "self");
}

Error fail_scatter_index(const char* op, const Tensor& self, int dim, const Tensor& index,
                         int64_t position) {
  TERN_LOG_ERROR("%s: index %lld is out of bounds for dimension %d with size %lld (element %lld of index)", op,
                 (long long)index_at(index, position), dim, (long long)size_or_one(self, dim), (long long)position);
  return Error::ExecutionFailed;
}

}  // namespace portable
}  // namespace tern
