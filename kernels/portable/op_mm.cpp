// aten::mm(Tensor self, Tensor mat2) -> Tensor
// args: [self, mat2, out]
//
// out[m, n] = self[m, k] x mat2[k, n], all of one dtype. float32: the
// blocked SGEMM (util/gemm.h); float64 and the integer types (wrapping
// modulo 2^bits, as torch): the reference loop (util/matmul.h).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/half_stage.h"
#include "kernels/portable/util/matmul.h"

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

struct MmRef {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    MatmulParams<T> p;
    p.m = args[0]->tensor.sizes[0], p.k = args[0]->tensor.sizes[1], p.n = args[1]->tensor.sizes[1];
    p.a = args[0]->tensor.data_as<const T>();
    p.b = args[1]->tensor.data_as<const T>();
    p.c = args[2]->tensor.data_as<T>();
    matmul_ref(p, 1, ctx);
    return Error::Ok;
  }
};

}  // namespace

static Error mm_prepare_unstaged(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  const char* names[] = {"self", "mat2", "out"};
  for (int i = 0; i < 3; ++i) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  const Tensor& a = args[0]->tensor;
  const Tensor& b = args[1]->tensor;
  const RunFn ref = matmul_ref_run_for<MmRef>(a.dtype);
  if (a.dtype != ScalarType::Float32 && ref == nullptr) return fail_dtype(ctx, "self", a.dtype);
  for (int i = 1; i < 3; ++i) TERN_CHECK_OK(expect_dtype(ctx, args[i]->tensor, names[i], a.dtype));
  if (a.dim != 2 || b.dim != 2 || a.sizes[1] != b.sizes[0]) {
    return ctx.fail(Error::InvalidProgram, "cannot multiply self (%d-d) and mat2 (%d-d): need "
                    "[m, k] x [k, n]", a.dim, b.dim);
  }
  const int64_t out_sizes[] = {a.sizes[0], b.sizes[1]};
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", out_sizes, 2));
  if (ref != nullptr) {
    ctx.set_run(ref);
    return Error::Ok;
  }
  ctx.request_scratch(gemm_scratch_bytes(a.sizes[0], b.sizes[1], a.sizes[1]));
  ctx.set_run(mm_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error mm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, mm_prepare_unstaged, 1);
}

}  // namespace portable
}  // namespace tern
