// Reference matrix multiply for the dtypes without a fast path: float64 and
// the integer types (aten::mm, aten::bmm, aten::addmm). float32 goes through
// the blocked SGEMM (gemm.h), float16 / bfloat16 are staged through it.
//
//   C[b] = beta * C[b] + alpha * A[b] x B[b]     for b < batch
//
//   A: [batch, m, k], B: [batch, k, n], C: [batch, m, n], contiguous.
//
// The loop order is i-p-j: a row of C is updated with a row of B scaled by
// A[i, p], so B and C are read along their rows.
//
// Integers wrap modulo 2^bits like PyTorch's CPU kernel: products and sums
// are computed in uint64_t (defined wraparound; no signed-overflow UB on a
// hostile input) and truncated to T on store, which is the same value modulo
// 2^bits as summing the exact products and truncating once.
//
// beta == 0 never reads C (NaN there does not propagate) and alpha == 0 skips
// the product (inf or NaN in A or B does not propagate), as BLAS and torch.
//
// Usage (in a kernel's run):
//   MatmulParams<double> p{m, n, k, a, b, c, 1.0, 0.0};
//   matmul_ref(p, batch, ctx);
//
// Threads: the batch * m rows of C are split over ctx's threads; each row is
// computed the same way on any thread, so the result does not depend on the
// thread count. Touches only its arguments; needs no scratch.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/elementwise.h"
#include "runtime/core/context.h"
#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"

namespace tern {
namespace portable {

// What alpha, beta and the products are computed in: double for float64,
// uint64_t (wrapping) for the integer types.
template <typename T>
using MatmulAcc = std::conditional_t<std::is_integral<T>::value, uint64_t, T>;

template <typename T>
struct MatmulParams {
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;  // [batch, m, k]
  const T* b = nullptr;  // [batch, k, n]
  T* c = nullptr;        // [batch, m, n]
  MatmulAcc<T> alpha = 1;
  MatmulAcc<T> beta = 0;
};

// A Scalar argument (Int, Double or Bool) as MatmulAcc<T>. For the integer
// types, as torch: a Double is truncated toward zero (the caller checks it
// fits int64_t), and the value keeps its two's-complement bits, so it wraps
// like the products do.
template <typename T>
MatmulAcc<T> matmul_scalar(const EValue& v) {
  if constexpr (std::is_integral<T>::value) {
    if (v.is_double()) return static_cast<uint64_t>(static_cast<int64_t>(v.d));
    return v.is_int() ? static_cast<uint64_t>(v.i) : static_cast<uint64_t>(v.is_bool() && v.b);
  } else {
    return static_cast<T>(v.to_double());
  }
}

// Kernel::run<T> for t among float64 and the integer types (bool
// excluded), nullptr for any other dtype: a kernel's prepare picks its
// reference run function with it.
template <typename Kernel>
RunFn matmul_ref_run_for(ScalarType t) {
  return t == ScalarType::Float64 ? Kernel::template run<double> : select_integer<Kernel>(t);
}

// Computes p for each of `batch` matrices over ctx's threads.
// Instantiated for double, int8_t, uint8_t, int16_t, int32_t, int64_t.
template <typename T>
void matmul_ref(const MatmulParams<T>& p, int64_t batch, RunContext& ctx);

}  // namespace portable
}  // namespace tern
