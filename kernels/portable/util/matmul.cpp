#include "kernels/portable/util/matmul.h"

namespace tern {
namespace portable {
namespace {

// Multiply-adds a thread should get at least (smaller work stays on one).
constexpr int64_t kMinFlopsPerThread = 1 << 16;

// Row i of one matrix: c[j] = beta * c[j] + alpha * sum_p a[p] * b[p, j].
template <typename T>
void matmul_row(const MatmulParams<T>& p, const T* a, const T* b, T* c) {
  using Acc = MatmulAcc<T>;
  for (int64_t j = 0; j < p.n; ++j) {
    c[j] = p.beta == Acc(0) ? T(0) : static_cast<T>(p.beta * static_cast<Acc>(c[j]));
  }
  if (p.alpha == Acc(0)) return;
  for (int64_t q = 0; q < p.k; ++q) {
    const Acc av = p.alpha * static_cast<Acc>(a[q]);
    const T* brow = b + q * p.n;
    for (int64_t j = 0; j < p.n; ++j) {
      c[j] = static_cast<T>(static_cast<Acc>(c[j]) + av * static_cast<Acc>(brow[j]));
    }
  }
}

}  // namespace

template <typename T>
void matmul_ref(const MatmulParams<T>& p, int64_t batch, RunContext& ctx) {
  const int64_t grain = grain_for(kMinFlopsPerThread, {p.n, p.k});
  ctx.parallel_for(batch * p.m, grain, [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // row r % m of matrix r / m
      const int64_t mat = r / p.m, i = r % p.m;
      matmul_row(p, p.a + (mat * p.m + i) * p.k, p.b + mat * p.k * p.n, p.c + r * p.n);
    }
  });
}

template void matmul_ref<double>(const MatmulParams<double>&, int64_t, RunContext&);
template void matmul_ref<int8_t>(const MatmulParams<int8_t>&, int64_t, RunContext&);
template void matmul_ref<uint8_t>(const MatmulParams<uint8_t>&, int64_t, RunContext&);
template void matmul_ref<int16_t>(const MatmulParams<int16_t>&, int64_t, RunContext&);
template void matmul_ref<int32_t>(const MatmulParams<int32_t>&, int64_t, RunContext&);
template void matmul_ref<int64_t>(const MatmulParams<int64_t>&, int64_t, RunContext&);

}  // namespace portable
}  // namespace tern
