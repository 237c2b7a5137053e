// aten::embedding_dense_backward(Tensor grad_output, Tensor indices,
//     SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor
// args: [grad_output, indices, num_weights, padding_idx, scale_grad_by_freq, out]
//
// The gradient of aten::embedding with respect to its weight: grad_output
// [..., d] (float32 or float64) summed into row indices[...] of out
// [num_weights, d]; the row padding_idx gets nothing; with scale_grad_by_freq
// each contribution is divided by how often its index occurs. indices int64
// or int32; one outside [0, num_weights) fails the run.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

struct EmbeddingBackward {
  int64_t count, d, rows, padding_idx;
  bool scale_by_freq;
};

template <typename T, typename I>
Error run(RunContext& ctx, EValue* const* args) {
  EmbeddingBackward st;
  memcpy(&st, ctx.state(), sizeof(st));
  const T* gy = args[0]->tensor.data_as<const T>();
  const I* idx = args[1]->tensor.data_as<const I>();
  T* out = args[5]->tensor.data_as<T>();
  for (int64_t r = 0; r < st.rows * st.d; ++r) out[r] = T(0);
  for (int64_t k = 0; k < st.count; ++k) {
    const int64_t i = static_cast<int64_t>(idx[k]);
    if (i < 0 || i >= st.rows) {
      TERN_LOG_ERROR("aten::embedding_dense_backward: index %lld at position %lld is out of range [0, %lld)",
                     (long long)i, (long long)k, (long long)st.rows);
      return Error::ExecutionFailed;
    }
  }
  for (int64_t k = 0; k < st.count; ++k) {
    const int64_t i = static_cast<int64_t>(idx[k]);
    if (i == st.padding_idx) continue;
    T scale = T(1);
    if (st.scale_by_freq) {
      int64_t n = 0;
      for (int64_t j = 0; j < st.count; ++j) n += static_cast<int64_t>(idx[j]) == i;
      scale = T(1) / static_cast<T>(n);
    }
    for (int64_t c = 0; c < st.d; ++c) out[i * st.d + c] += gy[k * st.d + c] * scale;
  }
  return Error::Ok;
}

}  // namespace

Error embedding_dense_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  const Tensor& gy = args[0]->tensor;
  const Tensor& idx = args[1]->tensor;
  if (gy.dtype != ScalarType::Float32 && gy.dtype != ScalarType::Float64) return fail_dtype(ctx, "grad_output", gy.dtype);
  if (idx.dtype != ScalarType::Int64 && idx.dtype != ScalarType::Int32) return fail_dtype(ctx, "indices", idx.dtype);
  if (gy.dim != idx.dim + 1) {
    return ctx.fail(Error::InvalidProgram, "grad_output must have one dim more than indices (%d), got %d", idx.dim, gy.dim);
  }
  for (int k = 0; k < idx.dim; ++k) {
    if (gy.sizes[k] != idx.sizes[k]) {
      return ctx.fail(Error::InvalidProgram, "grad_output dim %d is %lld, indices' %lld", k, (long long)gy.sizes[k],
                      (long long)idx.sizes[k]);
    }
  }
  const int64_t rows = args[2]->i, d = gy.sizes[gy.dim - 1];
  if (rows < 0) return ctx.fail(Error::InvalidProgram, "num_weights must be >= 0, got %lld", (long long)rows);
  const int64_t sizes[] = {rows, d};
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", sizes, 2));
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "out", gy.dtype));
  const EmbeddingBackward st{idx.numel, d, rows, args[3]->i, args[4]->b};
  memmove(ctx.state(), &st, sizeof(st));
  const bool f32 = gy.dtype == ScalarType::Float32, i64 = idx.dtype == ScalarType::Int64;
  ctx.set_run(f32 ? (i64 ? run<float, int64_t> : run<float, int32_t>) : (i64 ? run<double, int64_t> : run<double, int32_t>));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
