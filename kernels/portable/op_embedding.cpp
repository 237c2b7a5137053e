// aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1,
//     bool scale_grad_by_freq=False, bool sparse=False) -> Tensor
// args: [weight, indices, padding_idx, scale_grad_by_freq, sparse, out]
//
// weight [v, d] of any dtype (rows are copied as bytes), indices int64 or
// int32 of any shape; out = indices.sizes + [d]. padding_idx and the two
// flags only matter for gradients. An index outside [0, v) fails at run
// (ExecutionFailed): it depends on the data.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

template <typename I>
Error embedding_run(RunContext&, EValue* const* args) {
  const Tensor& weight = args[0]->tensor;
  const Tensor& indices = args[1]->tensor;
  const int64_t rows = weight.sizes[0];
  const size_t row_bytes = static_cast<size_t>(weight.sizes[1]) * scalar_type_size(weight.dtype);
  const char* src = weight.data_as<const char>();
  char* dst = args[5]->tensor.data_as<char>();
  const I* idx = indices.data_as<const I>();
  for (int64_t i = 0; i < indices.numel; ++i) {
    const int64_t r = static_cast<int64_t>(idx[i]);
    if (r < 0 || r >= rows) {
      TERN_LOG_ERROR("aten::embedding: index %lld is out of bounds for dimension 0 with size %lld (element %lld "
                     "of indices)", (long long)r, (long long)rows, (long long)i);
      return Error::ExecutionFailed;
    }
    memmove(dst + i * row_bytes, src + r * row_bytes, row_bytes);
  }
  return Error::Ok;
}

}  // namespace

Error embedding_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  const Tensor& weight = args[0]->tensor;
  const Tensor& indices = args[1]->tensor;
  if (weight.dim != 2) {
    return ctx.fail(Error::InvalidProgram, "weight must be 2-d, got %d-d", weight.dim);
  }
  if (indices.dim + 1 > kMaxDims) {
    return ctx.fail(Error::InvalidProgram, "indices has too many dims (%d)", indices.dim);
  }
  int64_t out_sizes[kMaxDims];
  for (int i = 0; i < indices.dim; ++i) out_sizes[i] = indices.sizes[i];
  out_sizes[indices.dim] = weight.sizes[1];
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "out", weight.dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", out_sizes, indices.dim + 1));
  switch (indices.dtype) {
    case ScalarType::Int64: ctx.set_run(embedding_run<int64_t>); break;
    case ScalarType::Int32: ctx.set_run(embedding_run<int32_t>); break;
    default: return fail_dtype(ctx, "indices", indices.dtype);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
