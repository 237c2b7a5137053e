// Tests of the portable matrix-multiply kernels: GEMM (util/gemm.h), mm, bmm,
// addmm. Expected values come from hand computation or from naive
// double-precision loops written here, never from the kernels themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/portable/util/gemm.h"
#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"
#include "tests/cpp/random_util.h"

namespace tern {
namespace {

using test::KernelHarness;
using namespace portable;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::random_floats;

// Each element within tol * (max |ref| + |ref[i]|), the tolerance the kernels
// promise (tests/cpp/compare.h).
void expect_close(const std::vector<float>& got, const std::vector<double>& ref,
                  double tol = 1e-4) {
  EXPECT_TRUE(test::all_close(got, ref, tol));
}

// ---------------------------------------------------------------- GEMM

// C[m, n] = alpha * A * B + beta * C0 in double, strided like GemmParams.
std::vector<double> ref_gemm(const GemmParams& p, const std::vector<float>& c0) {
  std::vector<double> c(p.m * p.n);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0.0;
      for (int64_t q = 0; q < p.k; ++q) {
        s += double(p.a[i * p.a_rs + q * p.a_cs]) * double(p.b[q * p.b_rs + j * p.b_cs]);
      }
      const double prior = p.beta == 0.f ? 0.0 : double(p.beta) * c0[i * p.ldc + j];
      c[i * p.n + j] = double(p.alpha) * s + prior;
    }
  }
  return c;
}

std::vector<float> run_gemm(const GemmParams& p) {
  std::vector<float> scratch(gemm_scratch_bytes(p.m, p.n, p.k) / sizeof(float) + 16);
  gemm_f32(p, scratch.data());
  return std::vector<float>(p.c, p.c + p.m * p.ldc);
}

TEST(Gemm, MatchesReferenceBelowAtAndAboveTileSizes) {
  const int64_t sizes[] = {1, 3, 7, 16, 17, 33, 69};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        std::vector<float> a = random_floats(m * k, 1), b = random_floats(k * n, 2);
        std::vector<float> c(m * n, kNaN);  // beta == 0 must not read C
        GemmParams p = gemm_row_major(m, n, k, a.data(), b.data(), c.data());
        std::vector<double> want = ref_gemm(p, c);
        SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k);
        expect_close(run_gemm(p), want);
      }
    }
  }
}

TEST(Gemm, TransposedOperandsThroughStridesWithAlphaBeta) {
  const int64_t shapes[][3] = {{1, 40, 9}, {37, 1, 20}, {19, 45, 300}, {70, 9, 5}};
  for (auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    std::vector<float> at = random_floats(k * m, 3);  // A^T stored [k, m]
    std::vector<float> bt = random_floats(n * k, 4);  // B^T stored [n, k]
    std::vector<float> c = random_floats(m * n, 5);
    GemmParams p;
    p.m = m, p.n = n, p.k = k;
    p.a = at.data(), p.a_rs = 1, p.a_cs = m;
    p.b = bt.data(), p.b_rs = 1, p.b_cs = k;
    p.c = c.data(), p.ldc = n;
    p.alpha = 0.5f, p.beta = -2.f;
    std::vector<double> want = ref_gemm(p, c);
    SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k);
    expect_close(run_gemm(p), want);
  }
}

TEST(Gemm, CrossesEveryCacheBlockBoundary) {
  // m > MC (64), n > NC (1024), k > KC (256), with a padded C row stride.
  const int64_t m = 70, n = 1030, k = 600, ldc = 1033;
  std::vector<float> a = random_floats(m * k, 6), b = random_floats(k * n, 7);
  std::vector<float> c = random_floats(m * ldc, 8);
  GemmParams p = gemm_row_major(m, n, k, a.data(), b.data(), c.data());
  p.ldc = ldc;
  p.beta = 1.f;
  std::vector<double> want = ref_gemm(p, c);
  std::vector<float> got_padded = run_gemm(p), got(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) got[i * n + j] = got_padded[i * ldc + j];
    EXPECT_EQ(got_padded[i * ldc + n], c[i * ldc + n]) << "wrote past the row";
  }
  expect_close(got, want);
}

TEST(Gemm, EmptyKGivesBetaTimesC) {
  std::vector<float> c = {1, 2, 3, 4};
  GemmParams p = gemm_row_major(2, 2, 0, nullptr, nullptr, c.data());
  p.beta = 3.f;
  EXPECT_EQ(run_gemm(p), (std::vector<float>{3, 6, 9, 12}));
  p.beta = 0.f;
  c.assign(4, kNaN);
  EXPECT_EQ(run_gemm(p), (std::vector<float>{0, 0, 0, 0}));
}

// ---------------------------------------------------------------- mm, bmm, addmm

TEST(OpMm, MultipliesHandComputed2x3By3x2) {
  KernelHarness h;
  EValue* a = h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue* b = h.tensor<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  EValue* out = h.empty<float>({2, 2});
  ASSERT_EQ(h.call("aten::mm", {a, b, out}), Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{58, 64, 139, 154}));
}

TEST(OpMm, RejectsMismatchedInnerDimsWrongOutMixedDtypesAndBool) {
  KernelHarness h;
  EValue* a = h.empty<float>({2, 3});
  EXPECT_EQ(h.prepare_only("aten::mm", {a, h.empty<float>({2, 2}), h.empty<float>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::mm", {a, h.empty<float>({3, 2}), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::mm", {h.empty<int64_t>({2, 3}), h.empty<int64_t>({3, 2}),
                                        h.empty<int64_t>({2, 2})}),
            Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::mm", {h.empty<int64_t>({2, 3}), h.empty<float>({3, 2}),
                                        h.empty<int64_t>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::mm", {h.empty_of(ScalarType::Bool, {2, 3}),
                                        h.empty_of(ScalarType::Bool, {3, 2}),
                                        h.empty_of(ScalarType::Bool, {2, 2})}),
            Error::OperatorMissing);
}

// int8 sums of products wrap modulo 2^8: 3 * 100 * 100 = 30000 = 48 and
// 3 * (-128) * 100 = -38400 = 0 (mod 256).
TEST(OpMm, Int8WrapsModulo256) {
  KernelHarness h;
  EValue* a = h.tensor<int8_t>({2, 3}, {100, 100, 100, -128, -128, -128});
  EValue* b = h.tensor<int8_t>({3, 1}, {100, 100, 100});
  EValue* out = h.empty<int8_t>({2, 1});
  ASSERT_EQ(h.call("aten::mm", {a, b, out}), Error::Ok);
  EXPECT_EQ(h.values<int8_t>(out), (std::vector<int8_t>{48, 0}));
  // 3 * 100 * 127 - 1 = 38099 = -45 and 3 * (-128) * 127 - 1 = -48769 = 127 (mod 256)
  EValue* out2 = h.empty<int8_t>({2, 1});
  EValue* bias = h.tensor<int8_t>({1}, {-1});
  ASSERT_EQ(h.call("aten::addmm", {bias, a, h.tensor<int8_t>({3, 1}, {127, 127, 127}), h.i(1),
                                   h.i(1), out2}),
            Error::Ok);
  EXPECT_EQ(h.values<int8_t>(out2), (std::vector<int8_t>{-45, 127}));
}

// a [bs, m, k] x b [bs, k, n] in double.
std::vector<double> ref_bmm(const std::vector<float>& av, const std::vector<float>& bv, int64_t bs,
                            int64_t m, int64_t k, int64_t n) {
  std::vector<double> want(bs * m * n, 0.0);
  for (int64_t t = 0; t < bs; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t q = 0; q < k; ++q)
          want[(t * m + i) * n + j] += double(av[(t * m + i) * k + q]) * bv[(t * k + q) * n + j];
  return want;
}

TEST(OpBmm, MatchesReferencePerBatch) {
  KernelHarness h;
  const int64_t bs = 3, m = 5, k = 17, n = 9;
  std::vector<float> av = random_floats(bs * m * k, 9), bv = random_floats(bs * k * n, 10);
  EValue* out = h.empty<float>({bs, m, n});
  ASSERT_EQ(h.call("aten::bmm", {h.tensor<float>({bs, m, k}, av), h.tensor<float>({bs, k, n}, bv),
                                 out}),
            Error::Ok);
  expect_close(h.values<float>(out), ref_bmm(av, bv, bs, m, k, n));
}

// Fewer and more batches than threads, each product big enough to split.
TEST(OpBmm, SplitsOverThreadsWithTheSameBits) {
  for (int64_t bs : {1, 2, 5}) {
    KernelHarness h;
    const int64_t m = 31, k = 70, n = 45;
    std::vector<float> av = random_floats(bs * m * k, 30), bv = random_floats(bs * k * n, 31);
    EValue* out = h.empty<float>({bs, m, n});
    ASSERT_EQ(h.call("aten::bmm", {h.tensor<float>({bs, m, k}, av), h.tensor<float>({bs, k, n}, bv), out}),
              Error::Ok);
    SCOPED_TRACE(::testing::Message() << "batch " << bs);
    expect_close(h.values<float>(out), ref_bmm(av, bv, bs, m, k, n));
  }
}

TEST(OpBmm, RejectsBatchMismatch) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::bmm", {h.empty<float>({2, 3, 4}), h.empty<float>({3, 4, 5}),
                                         h.empty<float>({2, 3, 5})}),
            Error::InvalidProgram);
}

// beta * self (broadcast from self_sizes) + alpha * mat1 x mat2, in double.
std::vector<double> ref_addmm(const std::vector<float>& self, std::vector<int64_t> self_sizes,
                              const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t k, int64_t n, double beta, double alpha) {
  std::vector<double> c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t q = 0; q < k; ++q) s += double(a[i * k + q]) * b[q * n + j];
      int64_t si = 0;
      if (self_sizes.size() == 1) si = self_sizes[0] == 1 ? 0 : j;
      if (self_sizes.size() == 2) si = (self_sizes[0] == 1 ? 0 : i) * self_sizes[1] +
                                       (self_sizes[1] == 1 ? 0 : j);
      c[i * n + j] = alpha * s + (beta == 0.0 ? 0.0 : beta * self[si]);
    }
  }
  return c;
}

TEST(OpAddmm, BroadcastsSelfRowColumnAndScalarWithAlphaBeta) {
  const int64_t m = 7, k = 33, n = 17;
  std::vector<float> a = random_floats(m * k, 11), b = random_floats(k * n, 12);
  const std::vector<std::vector<int64_t>> self_shapes = {{n}, {1, n}, {m, 1}, {m, n}, {}, {1}};
  for (const auto& ss : self_shapes) {
    KernelHarness h;
    int64_t numel = 1;
    for (int64_t s : ss) numel *= s;
    std::vector<float> self = random_floats(numel, 13);
    EValue* out = h.empty<float>({m, n});
    ASSERT_EQ(h.call("aten::addmm", {h.tensor<float>(ss, self), h.tensor<float>({m, k}, a),
                                     h.tensor<float>({k, n}, b), h.d(0.5), h.i(2), out}),
              Error::Ok);
    SCOPED_TRACE(::testing::Message() << "self dims " << ss.size());
    expect_close(h.values<float>(out), ref_addmm(self, ss, a, b, m, k, n, 0.5, 2.0));
  }
}

TEST(OpAddmm, LinearAtBatchOneMatchesReference) {
  // The gemv path: a [1, k] row times a [k, n] weight, plus a bias [n].
  KernelHarness h;
  const int64_t k = 300, n = 45;
  std::vector<float> bias = random_floats(n, 14), x = random_floats(k, 15);
  std::vector<float> w = random_floats(k * n, 16);
  EValue* out = h.empty<float>({1, n});
  ASSERT_EQ(h.call("aten::addmm", {h.tensor<float>({n}, bias), h.tensor<float>({1, k}, x),
                                   h.tensor<float>({k, n}, w), h.i(1), h.i(1), out}),
            Error::Ok);
  expect_close(h.values<float>(out), ref_addmm(bias, {n}, x, w, 1, k, n, 1.0, 1.0));
}

// Both matrix-vector shapes ([1, k] x [k, n] and [m, k] x [k, 1]) and a
// tall and a wide product, each large enough for 2 and 3 threads to split.
TEST(OpAddmm, SplitsOverThreadsWithTheSameBits) {
  const int64_t shapes[][3] = {{1, 300, 1001}, {517, 300, 1}, {203, 64, 37}, {9, 64, 700}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    KernelHarness h;
    std::vector<float> bias = random_floats(n, 32), a = random_floats(m * k, 33), b = random_floats(k * n, 34);
    EValue* out = h.empty<float>({m, n});
    ASSERT_EQ(h.call("aten::addmm", {h.tensor<float>({n}, bias), h.tensor<float>({m, k}, a),
                                     h.tensor<float>({k, n}, b), h.i(1), h.d(0.75), out}),
              Error::Ok);
    SCOPED_TRACE(::testing::Message() << m << " x " << k << " x " << n);
    expect_close(h.values<float>(out), ref_addmm(bias, {n}, a, b, m, k, n, 1.0, 0.75));
  }
}

TEST(OpAddmm, BetaZeroIgnoresNaNInSelf) {
  KernelHarness h;
  EValue* out = h.empty<float>({1, 1});
  ASSERT_EQ(h.call("aten::addmm", {h.tensor<float>({1}, {kNaN}), h.tensor<float>({1, 2}, {1, 2}),
                                   h.tensor<float>({2, 1}, {3, 4}), h.i(0), h.d(1.0), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out)[0], 11.f);
}

TEST(OpAddmm, RejectsSelfThatDoesNotBroadcast) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::addmm", {h.empty<float>({3}), h.empty<float>({2, 4}),
                                           h.empty<float>({4, 5}), h.i(1), h.i(1),
                                           h.empty<float>({2, 5})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
