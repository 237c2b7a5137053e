// aten::mm(Tensor self, Tensor mat2) -> Tensor
// args: [self, mat2, out]
//
// float32: out[m, n] = self[m, k] x mat2[k, n] (util/gemm.h).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

Error mm_run(RunContext& ctx, EValue* const* args) {
  const Tensor& a = args[0]->tensor;
  const Tensor& b = args[1]->tensor;
  Tensor& c = args[2]->tensor;
  gemm_f32(gemm_row_major(a.sizes[0], b.sizes[1], a.sizes[1], a.data_as<const float>(),
                          b.data_as<const float>(), c.data_as<float>()),
           ctx);
  return Error::Ok;
}

}  // namespace

static Error mm_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  const char* names[] = {"self", "mat2", "out"};
  for (int i = 0; i < 3; ++i) {
    TERN_CHECK_OK(ctx.expect_tensor(args, i));
    const ScalarType t = args[i]->tensor.dtype;
    if (t != ScalarType::Float32) return fail_dtype(ctx, names[i], t);
  }
  const Tensor& a = args[0]->tensor;
  const Tensor& b = args[1]->tensor;
  if (a.dim != 2 || b.dim != 2 || a.sizes[1] != b.sizes[0]) {
    return ctx.fail(Error::InvalidProgram, "cannot multiply self (%d-d) and mat2 (%d-d): need "
                    "[m, k] x [k, n]", a.dim, b.dim);
  }
  const int64_t out_sizes[] = {a.sizes[0], b.sizes[1]};
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", out_sizes, 2));
  ctx.request_scratch(gemm_scratch_bytes(a.sizes[0], b.sizes[1], a.sizes[1]));
  ctx.set_run(mm_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error mm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, mm_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
