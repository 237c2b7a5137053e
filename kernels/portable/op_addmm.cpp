// aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
//     Scalar alpha=1) -> Tensor
// args: [self, mat1, mat2, beta, alpha, out]
//
// out[m, n] = beta * self + alpha * mat1[m, k] x mat2[k, n], with self
// broadcast to [m, n] (a linear layer's bias is self [n]), all of one dtype.
// beta == 0 ignores self, NaN included, as torch does. float32: the blocked
// SGEMM (util/gemm.h); float64 and the integer types: the reference loop
// (util/matmul.h). Integer results wrap modulo 2^bits; a Double alpha or
// beta is truncated toward zero for them, as torch does.
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/half_stage.h"
#include "kernels/portable/util/matmul.h"

namespace tern {
namespace portable {
namespace {

// alpha and beta as each run function takes them (only the f32 pair or
// only one of the reference pairs is used, by dtype).
struct AddmmState {
  float alpha, beta;
  double alpha_f64, beta_f64;
  uint64_t alpha_int, beta_int;
};
static_assert(sizeof(AddmmState) <= PrepareContext::kStateBytes, "AddmmState must fit in state");

// out[i, j] = self broadcast to [m, n] (self is 0-d, [n], [1, n], [m, 1]...).
template <typename T>
void broadcast_self(const Tensor& self, int64_t m, int64_t n, T* out) {
  const T* s = self.data_as<const T>();
  const int64_t cs = self.dim >= 1 && self.sizes[self.dim - 1] != 1 ? 1 : 0;
  const int64_t rs = self.dim == 2 && self.sizes[0] != 1 ? self.sizes[1] : 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = s[i * rs + j * cs];
  }
}

Error addmm_run(RunContext& ctx, EValue* const* args) {
  AddmmState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& a = args[1]->tensor;
  const Tensor& b = args[2]->tensor;
  Tensor& c = args[5]->tensor;
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  if (st.beta != 0.f) broadcast_self<float>(args[0]->tensor, m, n, c.data_as<float>());
  GemmParams p = gemm_row_major(m, n, k, a.data_as<const float>(), b.data_as<const float>(),
                                c.data_as<float>());
  p.alpha = st.alpha;
  p.beta = st.beta;
  gemm_f32(p, ctx);
  return Error::Ok;
}

struct AddmmRef {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    AddmmState st;
    memcpy(&st, ctx.state(), sizeof(st));
    const Tensor& a = args[1]->tensor;
    MatmulParams<T> p;
    p.m = a.sizes[0], p.k = a.sizes[1], p.n = args[2]->tensor.sizes[1];
    p.a = a.data_as<const T>();
    p.b = args[2]->tensor.data_as<const T>();
    p.c = args[5]->tensor.data_as<T>();
    if constexpr (std::is_integral<T>::value) {
      p.alpha = st.alpha_int, p.beta = st.beta_int;
    } else {
      p.alpha = st.alpha_f64, p.beta = st.beta_f64;
    }
    if (p.beta != MatmulAcc<T>(0)) broadcast_self(args[0]->tensor, p.m, p.n, p.c);
    matmul_ref(p, 1, ctx);
    return Error::Ok;
  }
};

// self broadcasts to [m, n]: at most 2-d, each size 1 or the matching size.
bool broadcasts_to(const Tensor& self, int64_t m, int64_t n) {
  if (self.dim > 2) return false;
  if (self.dim >= 1 && self.sizes[self.dim - 1] != 1 && self.sizes[self.dim - 1] != n) return false;
  return self.dim < 2 || self.sizes[0] == 1 || self.sizes[0] == m;
}

}  // namespace

static Error addmm_prepare_unstaged(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  const int tensor_args[] = {0, 1, 2, 5};
  const char* names[] = {"self", "mat1", "mat2", "out"};
  for (int i = 0; i < 4; ++i) TERN_CHECK_OK(ctx.expect_tensor(args, tensor_args[i]));
  const ScalarType dtype = args[0]->tensor.dtype;
  const RunFn ref = matmul_ref_run_for<AddmmRef>(dtype);
  if (dtype != ScalarType::Float32 && ref == nullptr) return fail_dtype(ctx, "self", dtype);
  for (int i = 1; i < 4; ++i) {
    TERN_CHECK_OK(expect_dtype(ctx, args[tensor_args[i]]->tensor, names[i], dtype));
  }
  if (!args[3]->is_scalar() || !args[4]->is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "beta and alpha must be scalars, got %s and %s",
                    tag_name(args[3]->tag), tag_name(args[4]->tag));
  }
  const bool integral = !scalar_type_is_floating(dtype);
  for (int i = 3; i < 5 && integral; ++i) {  // a Double becomes an int64 (matmul_scalar)
    const double d = args[i]->is_double() ? args[i]->d : 0.0;
    if (!(d >= -0x1p63 && d < 0x1p63)) {
      return ctx.fail(Error::InvalidProgram, "%s %g does not fit int64", i == 3 ? "beta" : "alpha",
                      d);
    }
  }
  const Tensor& a = args[1]->tensor;
  const Tensor& b = args[2]->tensor;
  if (a.dim != 2 || b.dim != 2 || a.sizes[1] != b.sizes[0]) {
    return ctx.fail(Error::InvalidProgram, "cannot multiply mat1 (%d-d) and mat2 (%d-d): need "
                    "[m, k] x [k, n]", a.dim, b.dim);
  }
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  if (!broadcasts_to(args[0]->tensor, m, n)) {
    return ctx.fail(Error::InvalidProgram, "self (%d-d) does not broadcast to [%lld, %lld]",
                    args[0]->tensor.dim, (long long)m, (long long)n);
  }
  const int64_t out_sizes[] = {m, n};
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", out_sizes, 2));
  AddmmState st{static_cast<float>(args[4]->to_double()), static_cast<float>(args[3]->to_double()),
                matmul_scalar<double>(*args[4]), matmul_scalar<double>(*args[3]), 0, 0};
  if (integral) {
    st.alpha_int = matmul_scalar<int64_t>(*args[4]);
    st.beta_int = matmul_scalar<int64_t>(*args[3]);
  }
  memmove(ctx.state(), &st, sizeof(st));
  if (ref != nullptr) {
    ctx.set_run(ref);
    return Error::Ok;
  }
  ctx.request_scratch(gemm_scratch_bytes(m, n, k));
  ctx.set_run(addmm_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error addmm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, addmm_prepare_unstaged, 1);
}

}  // namespace portable
}  // namespace tern
