#include "kernels/portable/util/gemm.h"

#include <cstring>

namespace tern {
namespace portable {
namespace {

// Micro-tile MR x NR = 4 x 8: 32 accumulators are 8 SSE registers (the
// x86-64 baseline has 16) or 4 AVX ones, so the compiler keeps them all in
// registers. Larger tiles (6 x 16, 4 x 16) spill with GCC 12 and ran 3x
// slower, even with -mavx2. Cache blocks: a KC x NR panel of B (8 KB) stays
// in L1 across the MR panels of A, an MC x KC block of A (64 KB) in L2, a
// KC x NC block of B (1 MB) in L2/L3.
constexpr int64_t kMr = 4;
constexpr int64_t kNr = 8;
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 64;
constexpr int64_t kNc = 1024;

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
size_t align64(size_t bytes) { return (bytes + 63) & ~size_t(63); }

// dst[panel][p][i] = A(i0 + panel * MR + i, p0 + p), zero past `mc` rows.
void pack_a(const GemmParams& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ir = 0; ir < mc; ir += kMr) {
    const int64_t mr = min64(kMr, mc - ir);
    const float* a = g.a + (i0 + ir) * g.a_rs + p0 * g.a_cs;
    for (int64_t p = 0; p < kc; ++p) {
      const float* ap = a + p * g.a_cs;
      int64_t i = 0;
      for (; i < mr; ++i) dst[i] = ap[i * g.a_rs];
      for (; i < kMr; ++i) dst[i] = 0.f;
      dst += kMr;
    }
  }
}

// dst[panel][p][j] = B(p0 + p, j0 + panel * NR + j), zero past `nc` columns.
void pack_b(const GemmParams& g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t nr = min64(kNr, nc - jr);
    const float* b = g.b + p0 * g.b_rs + (j0 + jr) * g.b_cs;
    for (int64_t p = 0; p < kc; ++p) {
      const float* bp = b + p * g.b_rs;
      if (nr == kNr && g.b_cs == 1) {
        memmove(dst, bp, sizeof(float) * kNr);
      } else {
        int64_t j = 0;
        for (; j < nr; ++j) dst[j] = bp[j * g.b_cs];
        for (; j < kNr; ++j) dst[j] = 0.f;
      }
      dst += kNr;
    }
  }
}

// c[mr, nr] = alpha * acc + beta * c (beta == 0: c is not read).
void store_tile(const float (&acc)[kMr][kNr], float* c, int64_t ldc, int64_t mr, int64_t nr,
                float alpha, float beta) {
  for (int64_t i = 0; i < mr; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.f) {
      for (int64_t j = 0; j < nr; ++j) ci[j] = alpha * acc[i][j];
    } else {
      for (int64_t j = 0; j < nr; ++j) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
  }
}

// One MR x NR tile over a KC slice: acc = Ap[kc][MR] * Bp[kc][NR], stored to c.
void micro_kernel(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* c,
                  int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t i = 0; i < kMr; ++i) {
      const float ai = ap[i];
      for (int64_t j = 0; j < kNr; ++j) acc[i][j] += ai * bp[j];
    }
    ap += kMr;
    bp += kNr;
  }
  store_tile(acc, c, ldc, mr, nr, alpha, beta);
}

// C *= beta (or C = 0 when beta == 0): the whole product when K == 0.
void scale_c(const GemmParams& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    float* ci = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) ci[j] = g.beta == 0.f ? 0.f : g.beta * ci[j];
  }
}

// Multiplies the packed blocks into C[mc, nc] at (i0, j0).
void macro_kernel(const GemmParams& g, const float* pa, const float* pb, int64_t i0, int64_t mc,
                  int64_t j0, int64_t nc, int64_t kc, float beta) {
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t nr = min64(kNr, nc - jr);
    const float* bp = pb + jr * kc;
    for (int64_t ir = 0; ir < mc; ir += kMr) {
      const int64_t mr = min64(kMr, mc - ir);
      float* c = g.c + (i0 + ir) * g.ldc + j0 + jr;
      micro_kernel(kc, pa + ir * kc, bp, c, g.ldc, mr, nr, g.alpha, beta);
    }
  }
}

// A matrix-vector product, the shape of a linear layer at batch 1:
//   y[i * incy] = alpha * sum_p A(i, p) * x[p * incx] + beta * y[i * incy]
// Packing would cost as much as the product itself (each element of A is
// used once), so it streams A directly.
struct Gemv {
  int64_t m, k;
  const float* a;
  int64_t a_rs, a_cs;
  const float* x;
  int64_t incx;
  float* y;
  int64_t incy;
  float alpha, beta;
};

// sum_p a[p * inca] * x[p * incx], with 8 partial sums so it vectorizes.
float dot(const float* a, int64_t inca, const float* x, int64_t incx, int64_t k) {
  float s[8] = {};
  int64_t p = 0;
  if (inca == 1 && incx == 1) {
    for (; p + 8 <= k; p += 8) {
      for (int t = 0; t < 8; ++t) s[t] += a[p + t] * x[p + t];
    }
  }
  float r = 0.f;
  for (; p < k; ++p) r += a[p * inca] * x[p * incx];
  return r + (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
}

void gemv(const Gemv& v) {
  if (v.a_rs == 1 && v.incy == 1) {
    // columns of A are contiguous: y = beta * y + sum_p (alpha * x_p) * A[:, p]
    for (int64_t i = 0; i < v.m; ++i) v.y[i] = v.beta == 0.f ? 0.f : v.beta * v.y[i];
    for (int64_t p = 0; p < v.k; ++p) {
      const float xp = v.alpha * v.x[p * v.incx];
      const float* col = v.a + p * v.a_cs;
      for (int64_t i = 0; i < v.m; ++i) v.y[i] += xp * col[i];
    }
    return;
  }
  for (int64_t i = 0; i < v.m; ++i) {
    const float d = dot(v.a + i * v.a_rs, v.a_cs, v.x, v.incx, v.k);
    float* y = v.y + i * v.incy;
    *y = v.beta == 0.f ? v.alpha * d : v.alpha * d + v.beta * *y;
  }
}

// C[:, 0] = alpha * A * B[:, 0] + beta * C[:, 0] (n == 1).
void gemv_column(const GemmParams& g) {
  gemv({g.m, g.k, g.a, g.a_rs, g.a_cs, g.b, g.b_rs, g.c, g.ldc, g.alpha, g.beta});
}

// C[0, :] = alpha * B^T * A[0, :] + beta * C[0, :] (m == 1).
void gemv_row(const GemmParams& g) {
  gemv({g.n, g.k, g.b, g.b_cs, g.b_rs, g.a, g.a_cs, g.c, 1, g.alpha, g.beta});
}

// C = alpha * A * B + beta * C as a matrix-vector product, for m == 1 or n == 1.
void gemm_as_gemv(const GemmParams& g) { g.n == 1 ? gemv_column(g) : gemv_row(g); }

}  // namespace

size_t gemm_scratch_bytes(int64_t m, int64_t n, int64_t k) {
  if (m <= 1 || n <= 1) return 0;  // no packing (gemv or scale)
  return gemm_blocked_scratch_bytes(m, n, k);
}

size_t gemm_blocked_scratch_bytes(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const int64_t kc = min64(kKc, k);
  const int64_t a_floats = round_up(min64(kMc, m), kMr) * kc;
  const int64_t b_floats = round_up(min64(kNc, n), kNr) * kc;
  return align64(sizeof(float) * a_floats) + align64(sizeof(float) * b_floats);
}

void gemm_f32(const GemmParams& g, void* scratch) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) return scale_c(g);
  if (g.m == 1 || g.n == 1) return gemm_as_gemv(g);
  gemm_f32_blocked(g, scratch);
}

void gemm_f32_blocked(const GemmParams& g, void* scratch) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) return scale_c(g);
  const int64_t kc_max = min64(kKc, g.k);
  float* pa = static_cast<float*>(scratch);
  float* pb = pa + align64(sizeof(float) * round_up(min64(kMc, g.m), kMr) * kc_max) / sizeof(float);
  for (int64_t j0 = 0; j0 < g.n; j0 += kNc) {
    const int64_t nc = min64(kNc, g.n - j0);
    for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
      const int64_t kc = min64(kKc, g.k - p0);
      const float beta = p0 == 0 ? g.beta : 1.f;  // later K slices accumulate
      pack_b(g, p0, kc, j0, nc, pb);
      for (int64_t i0 = 0; i0 < g.m; i0 += kMc) {
        const int64_t mc = min64(kMc, g.m - i0);
        pack_a(g, i0, mc, p0, kc, pa);
        macro_kernel(g, pa, pb, i0, mc, j0, nc, kc, beta);
      }
    }
  }
}

namespace {

// Splits along the longer side of C, in whole micro-tiles, into ranges of
// at least kMinFlopsPerThread multiply-adds.
constexpr int64_t kMinFlopsPerThread = 1 << 16;

GemmParams rows(const GemmParams& g, int64_t i0, int64_t i1) {
  GemmParams s = g;
  s.m = i1 - i0, s.a = g.a + i0 * g.a_rs, s.c = g.c + i0 * g.ldc;
  return s;
}

GemmParams cols(const GemmParams& g, int64_t j0, int64_t j1) {
  GemmParams s = g;
  s.n = j1 - j0, s.b = g.b + j0 * g.b_cs, s.c = g.c + j0;
  return s;
}

// Tiles of `tile` along a side of `len`, with a grain worth a thread.
void split_tiles(int64_t len, int64_t tile, std::initializer_list<int64_t> flops_per_tile, int64_t* tiles,
                 int64_t* grain) {
  *tiles = (len + tile - 1) / tile;
  *grain = grain_for(kMinFlopsPerThread, flops_per_tile);
}

}  // namespace

void gemm_f32(const GemmParams& g, RunContext& ctx) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0 || ctx.thread_count() == 1) return gemm_f32(g, ctx.scratch());
  int64_t tiles, grain;
  if (g.m == 1 || g.n == 1) {
    // gemv: each element of y is its own dot product or axpy lane; the
    // variant is the whole product's, whatever the range's shape
    const bool column = g.n == 1;
    split_tiles(column ? g.m : g.n, 1, {g.k}, &tiles, &grain);
    ctx.parallel_for(tiles, grain, [&](RunContext&, int64_t t0, int64_t t1) {
      column ? gemv_column(rows(g, t0, t1)) : gemv_row(cols(g, t0, t1));
    });
    return;
  }
  const bool by_cols = g.n >= g.m;
  const int64_t tile = by_cols ? kNr : kMr;
  split_tiles(by_cols ? g.n : g.m, tile, {tile, by_cols ? g.m : g.n, g.k}, &tiles, &grain);
  ctx.parallel_for(tiles, grain, [&](RunContext& c, int64_t t0, int64_t t1) {
    const int64_t len = by_cols ? g.n : g.m;
    const int64_t lo = t0 * tile, hi = t1 * tile < len ? t1 * tile : len;
    gemm_f32_blocked(by_cols ? cols(g, lo, hi) : rows(g, lo, hi), c.scratch());
  });
}

}  // namespace portable
}  // namespace tern
