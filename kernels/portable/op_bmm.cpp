// aten::bmm(Tensor self, Tensor mat2) -> Tensor
// args: [self, mat2, out]
//
// out[b, m, n] = self[b, m, k] x mat2[b, k, n], all of one dtype. float32:
// one blocked SGEMM per batch (util/gemm.h); float64 and the integer types
// (wrapping modulo 2^bits, as torch): the reference loop (util/matmul.h).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/half_stage.h"
#include "kernels/portable/util/matmul.h"

namespace tern {
namespace portable {
namespace {

Error bmm_run(RunContext& ctx, EValue* const* args) {
  const Tensor& a = args[0]->tensor;
  const Tensor& b = args[1]->tensor;
  Tensor& c = args[2]->tensor;
  const int64_t batch = a.sizes[0], m = a.sizes[1], k = a.sizes[2], n = b.sizes[2];
  auto product = [&](int64_t i) {
    return gemm_row_major(m, n, k, a.data_as<const float>() + i * m * k,
                          b.data_as<const float>() + i * k * n, c.data_as<float>() + i * m * n);
  };
  if (batch >= ctx.thread_count()) {  // whole products per thread (same bits as split ones)
    ctx.parallel_for(batch, 1, [&](RunContext& t, int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) gemm_f32(product(i), t.scratch());
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) gemm_f32(product(i), ctx);
  }
  return Error::Ok;
}

struct BmmRef {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    const Tensor& a = args[0]->tensor;
    MatmulParams<T> p;
    p.m = a.sizes[1], p.k = a.sizes[2], p.n = args[1]->tensor.sizes[2];
    p.a = a.data_as<const T>();
    p.b = args[1]->tensor.data_as<const T>();
    p.c = args[2]->tensor.data_as<T>();
    matmul_ref(p, a.sizes[0], ctx);
    return Error::Ok;
  }
};

}  // namespace

static Error bmm_prepare_unstaged(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  const char* names[] = {"self", "mat2", "out"};
  for (int i = 0; i < 3; ++i) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  const Tensor& a = args[0]->tensor;
  const Tensor& b = args[1]->tensor;
  const RunFn ref = matmul_ref_run_for<BmmRef>(a.dtype);
  if (a.dtype != ScalarType::Float32 && ref == nullptr) return fail_dtype(ctx, "self", a.dtype);
  for (int i = 1; i < 3; ++i) TERN_CHECK_OK(expect_dtype(ctx, args[i]->tensor, names[i], a.dtype));
  if (a.dim != 3 || b.dim != 3 || a.sizes[0] != b.sizes[0] || a.sizes[2] != b.sizes[1]) {
    return ctx.fail(Error::InvalidProgram, "cannot multiply self (%d-d) and mat2 (%d-d): need "
                    "[b, m, k] x [b, k, n]", a.dim, b.dim);
  }
  const int64_t out_sizes[] = {a.sizes[0], a.sizes[1], b.sizes[2]};
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", out_sizes, 3));
  if (ref != nullptr) {
    ctx.set_run(ref);
    return Error::Ok;
  }
  ctx.request_scratch(gemm_scratch_bytes(a.sizes[1], b.sizes[2], a.sizes[2]));
  ctx.set_run(bmm_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error bmm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, bmm_prepare_unstaged, 1);
}

}  // namespace portable
}  // namespace tern
