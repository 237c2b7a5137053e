// Portable single-precision matrix multiply (SGEMM), cache-blocked.
//
//   C = alpha * A * B + beta * C
//
//   A: M x K, element (i, p) at a[i * a_rs + p * a_cs]
//   B: K x N, element (p, j) at b[p * b_rs + j * b_cs]
//   C: M x N, element (i, j) at c[i * ldc + j]
//
// Any operand may be transposed by passing swapped strides: a row-major
// A^T stored as [K, M] is { a_rs = 1, a_cs = M }. Both operands are packed
// into scratch (so strides cost nothing in the inner loop):
//
//   for each NC-wide column block of B, each KC-deep slice of K:
//     pack B[kc, nc] into NR-wide panels   // [nc/NR][kc][NR], zero-padded
//     for each MC-tall row block of A:
//       pack A[mc, kc] into MR-tall panels // [mc/MR][kc][MR], zero-padded
//       for each NR x MR tile: micro-kernel (accumulators in a local array)
//
// The micro-kernel is plain C++ written so the compiler keeps the MR x NR
// accumulators in vector registers; the ISA-specific kernels live in
// backends/cpu. beta == 0 never reads C (NaN in C does not propagate), as in
// BLAS and torch.addmm.
//
// Usage (in a kernel):
//   prepare: ctx.request_scratch(gemm_scratch_bytes(m, n, k));
//   run:     gemm_f32(params, ctx);             // over the method's threads
//
// Threads: gemm_f32(p, ctx) splits C into column (or row) ranges, whole
// micro-tiles each, one per thread; every thread packs what its range needs
// in its own scratch. Each element of C is summed in the same order however
// C is split, so the result is the same for any thread count.
//
// Thread safety: gemm_f32 only touches its arguments and the scratch given.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t a_rs = 0, a_cs = 1;  // row and column strides of A (elements)
  const float* b = nullptr;
  int64_t b_rs = 0, b_cs = 1;  // row and column strides of B (elements)
  float* c = nullptr;
  int64_t ldc = 0;  // row stride of C (elements); columns are contiguous
  float alpha = 1.f;
  float beta = 0.f;
};

// C[m, n] = A[m, k] x B[k, n], all contiguous row-major (alpha 1, beta 0).
inline GemmParams gemm_row_major(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                                 float* c) {
  GemmParams p;
  p.m = m, p.n = n, p.k = k;
  p.a = a, p.a_rs = k, p.a_cs = 1;
  p.b = b, p.b_rs = n, p.b_cs = 1;
  p.c = c, p.ldc = n;
  return p;
}

// Bytes of scratch gemm_f32 needs for these sizes (a multiple of 64).
size_t gemm_scratch_bytes(int64_t m, int64_t n, int64_t k);

// Computes p (see above) on the calling thread. `scratch` holds
// gemm_scratch_bytes(m, n, k) bytes, 64-byte aligned.
void gemm_f32(const GemmParams& p, void* scratch);

// Computes p over ctx's threads, each with gemm_scratch_bytes(m, n, k) bytes
// of ctx.scratch(): the same bits as gemm_f32(p, scratch).
void gemm_f32(const GemmParams& p, RunContext& ctx);

// The cache-blocked path whatever the shape (gemm_f32 takes a matrix-vector
// path when m or n is 1). Every element of C comes out the same however a
// caller splits C's rows or columns into separate calls: for callers that
// split C themselves (convolution over pixel ranges).
void gemm_f32_blocked(const GemmParams& p, void* scratch);

// Bytes of scratch gemm_f32_blocked needs (a multiple of 64).
size_t gemm_blocked_scratch_bytes(int64_t m, int64_t n, int64_t k);

}  // namespace portable
}  // namespace tern
