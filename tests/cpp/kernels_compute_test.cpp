// Tests of the compute-heavy portable kernels: GEMM (util/gemm.h), mm, bmm,
// addmm, convolution, pooling, layer and batch norm, embedding. Expected
// values come from hand computation or from naive double-precision loops
// written here, never from the kernels themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/cpp/random_util.h"
#include "kernels/portable/util/gemm.h"
#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"

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

// ---------------------------------------------------------------- convolution

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

int64_t ref_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

std::vector<double> ref_conv(const ConvCase& cc, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t oh = ref_out_size(cc.h, cc.kh, cc.sh, cc.ph, cc.dh);
  const int64_t ow = ref_out_size(cc.w, cc.kw, cc.sw, cc.pw, cc.dw);
  const int64_t cg = cc.c / cc.groups, ocg = cc.oc / cc.groups;
  std::vector<double> out(cc.n * cc.oc * oh * ow);
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < cc.oc; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double s = cc.bias ? b[o] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < cc.kh; ++i)
              for (int64_t j = 0; j < cc.kw; ++j) {
                const int64_t ih = y * cc.sh - cc.ph + i * cc.dh;
                const int64_t iw = z * cc.sw - cc.pw + j * cc.dw;
                if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
                const int64_t c = (o / ocg) * cg + ci;
                s += double(x[((n * cc.c + c) * cc.h + ih) * cc.w + iw]) *
                     w[((o * cg + ci) * cc.kh + i) * cc.kw + j];
              }
          out[((n * cc.oc + o) * oh + y) * ow + z] = s;
        }
  return out;
}

// Runs aten::convolution on random data; `one_d` passes [n, c, w] tensors.
void check_conv(const ConvCase& cc, bool one_d = false) {
  KernelHarness h;
  const int64_t oh = ref_out_size(cc.h, cc.kh, cc.sh, cc.ph, cc.dh);
  const int64_t ow = ref_out_size(cc.w, cc.kw, cc.sw, cc.pw, cc.dw);
  std::vector<float> x = random_floats(cc.n * cc.c * cc.h * cc.w, 20);
  std::vector<float> w = random_floats(cc.oc * (cc.c / cc.groups) * cc.kh * cc.kw, 21);
  std::vector<float> b = random_floats(cc.oc, 22);
  EValue *xv, *wv, *out, *stride, *pad, *dil;
  if (one_d) {
    xv = h.tensor<float>({cc.n, cc.c, cc.w}, x);
    wv = h.tensor<float>({cc.oc, cc.c / cc.groups, cc.kw}, w);
    out = h.empty<float>({cc.n, cc.oc, ow});
    stride = h.ints({cc.sw}), pad = h.ints({cc.pw}), dil = h.ints({cc.dw});
  } else {
    xv = h.tensor<float>({cc.n, cc.c, cc.h, cc.w}, x);
    wv = h.tensor<float>({cc.oc, cc.c / cc.groups, cc.kh, cc.kw}, w);
    out = h.empty<float>({cc.n, cc.oc, oh, ow});
    stride = h.ints({cc.sh, cc.sw}), pad = h.ints({cc.ph, cc.pw}), dil = h.ints({cc.dh, cc.dw});
  }
  EValue* bias = cc.bias ? h.tensor<float>({cc.oc}, b) : h.none();
  ASSERT_EQ(h.call("aten::convolution", {xv, wv, bias, stride, pad, dil, h.b(false),
                                         h.ints({0, 0}), h.i(cc.groups), out}),
            Error::Ok);
  expect_close(h.values<float>(out), ref_conv(cc, x, w, b));
}

TEST(OpConvolution, MatchesReferenceOverStridePaddingDilationGroups) {
  const ConvCase cases[] = {
      // n  c   h   w  oc kh kw sh sw ph pw dh dw g  bias
      {1, 3, 8, 8, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, true},      // plain 3x3
      {2, 5, 9, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, false},    // same padding, batch 2
      {1, 4, 11, 10, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, true},   // stride 2
      {1, 3, 12, 13, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1, true},    // dilation 2
      {2, 6, 7, 9, 4, 3, 2, 2, 1, 1, 0, 1, 2, 2, true},      // groups 2, mixed h/w
      {1, 8, 6, 6, 33, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},     // 1x1 pointwise
      {1, 8, 6, 6, 8, 1, 1, 2, 2, 0, 0, 1, 1, 4, false},     // 1x1 stride 2, groups
      {2, 7, 10, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 7, true},     // depthwise
      {1, 5, 13, 12, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5, false},   // depthwise stride 2
      {1, 4, 9, 9, 4, 5, 3, 1, 2, 4, 2, 2, 1, 4, true},      // depthwise dilated
      {1, 3, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, true},      // channel multiplier 2
      {1, 2, 5, 5, 3, 5, 5, 1, 1, 0, 0, 1, 1, 1, true},      // kernel = image
      {1, 64, 32, 30, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  // several im2col chunks
  };
  for (const ConvCase& cc : cases) {
    SCOPED_TRACE(::testing::Message() << "c=" << cc.c << " oc=" << cc.oc << " k=" << cc.kh << "x"
                                      << cc.kw << " s=" << cc.sh << " groups=" << cc.groups);
    check_conv(cc);
  }
}

// Large enough that 2 and 3 threads split the work (the harness checks the
// bits equal the 1-thread run's): pixels across images and groups, partial
// micro-tiles at range ends, channel planes for depthwise.
TEST(OpConvolution, SplitsOverThreadsWithTheSameBits) {
  const ConvCase cases[] = {
      // n  c   h   w  oc kh kw sh sw ph pw dh dw g  bias
      {1, 16, 19, 21, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   // 3x3, 399 pixels
      {2, 32, 13, 15, 47, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},   // pointwise, 2 images
      {3, 12, 11, 9, 18, 3, 3, 2, 1, 1, 1, 1, 1, 3, false},   // groups 3, 3 images
      {2, 33, 28, 27, 33, 3, 3, 1, 1, 1, 1, 1, 1, 33, true},  // depthwise, 66 planes
      {1, 9, 4, 4, 300, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},    // 16 pixels, many channels
  };
  for (const ConvCase& cc : cases) {
    SCOPED_TRACE(::testing::Message() << "c=" << cc.c << " oc=" << cc.oc << " groups=" << cc.groups);
    check_conv(cc);
  }
}

// No output channels (weight [0, c, k, k]: PyTorch refuses it) or no input
// channels (PyTorch gives a 0-channel output): refused at prepare, naming the
// weight. Their work per pixel is 0, which the thread split once divided by.
TEST(OpConvolution, RefusesNoOutputOrInputChannels) {
  KernelHarness h;
  std::string why;
  auto conv = [&](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> out) {
    return h.prepare_only("aten::convolution", {h.empty<float>(x), h.empty<float>(w), h.none(), h.ints({1, 1}),
                                                h.ints({0, 0}), h.ints({1, 1}), h.b(false), h.ints({0, 0}), h.i(1),
                                                h.empty<float>(out)}, &why);
  };
  EXPECT_EQ(conv({1, 1, 5, 5}, {0, 1, 3, 3}, {1, 0, 3, 3}), Error::InvalidProgram);
  EXPECT_NE(why.find("weight [0, 1, ...] over 1 input channels: no channels"), std::string::npos) << why;
  EXPECT_EQ(conv({1, 1, 5, 5}, {0, 1, 1, 1}, {1, 0, 5, 5}), Error::InvalidProgram);
  EXPECT_EQ(conv({2, 0, 4, 4}, {3, 0, 3, 3}, {2, 3, 2, 2}), Error::InvalidProgram);
  EXPECT_EQ(conv({1, 1, 5, 5}, {2, 1, 3, 3}, {1, 2, 3, 3}), Error::Ok);
}

TEST(OpConvolution, RunsOneDimensionalAsHeightOne) {
  check_conv({2, 4, 1, 20, 6, 1, 3, 1, 2, 0, 1, 1, 2, 2, true}, true);
  check_conv({1, 6, 1, 15, 6, 1, 5, 1, 1, 0, 2, 1, 1, 6, false}, true);  // depthwise
}

TEST(OpConvolution, RejectsGroupMismatchWrongOutAndInt32TakesTransposed) {
  KernelHarness h;
  auto args = [&](EValue* x, EValue* w, bool transposed, int64_t groups, EValue* out) {
    return std::vector<EValue*>{x, w, h.none(), h.ints({1, 1}), h.ints({0, 0}), h.ints({1, 1}),
                                h.b(transposed), h.ints({0, 0}), h.i(groups), out};
  };
  EValue* x = h.empty<float>({1, 4, 5, 5});
  EValue* w = h.empty<float>({6, 4, 3, 3});
  EValue* good_out = h.empty<float>({1, 6, 3, 3});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, false, 1, good_out)), Error::Ok);
  // transposed (float32 on the direct path): weight [c, oc, k, k]
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, h.empty<float>({4, 6, 3, 3}), true, 1,
                                                     h.empty<float>({1, 6, 7, 7}))),
            Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, true, 1, good_out)),
            Error::InvalidProgram);  // weight's first dim (6) is not the input's channels (4)
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, false, 4, good_out)),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, false, 1, h.empty<float>({1, 6, 5, 5}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(h.empty<int32_t>({1, 4, 5, 5}), w, false, 1,
                                                     good_out)),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(h.empty<int64_t>({1, 4, 5, 5}), w, false, 1,
                                                     good_out)),
            Error::InvalidProgram);  // weight float32, input int64
  EXPECT_EQ(h.prepare_only("aten::convolution", args(h.empty<float>({1, 4, 2, 2}), w, false, 1,
                                                     h.empty<float>({1, 6, 0, 0}))),
            Error::InvalidProgram);  // kernel larger than the input
}

// The direct path (util/conv_direct.h): 3-d and transposed in float64, int64
// and float32, output_padding below stride or dilation as torch requires.
TEST(OpConvolution, DirectPathTakes3dAndTransposedAndChecksOutputPadding) {
  KernelHarness h;
  auto args = [&](EValue* x, EValue* w, bool transposed, std::vector<int64_t> out_pad,
                  EValue* out) {
    return std::vector<EValue*>{x, w, h.none(), h.ints({2}), h.ints({0}), h.ints({1}),
                                h.b(transposed), h.ints(out_pad), h.i(1), out};
  };
  EValue* x3 = h.empty<int64_t>({1, 2, 5, 5, 5});
  EValue* w3 = h.empty<int64_t>({3, 2, 3, 3, 3});
  EValue* out3 = h.empty<int64_t>({1, 3, 2, 2, 2});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x3, w3, false, {0}, out3)), Error::Ok);
  EValue* x3f = h.empty<float>({1, 2, 5, 5, 5});
  EValue* w3f = h.empty<float>({3, 2, 3, 3, 3});
  EValue* out3f = h.empty<float>({1, 3, 2, 2, 2});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x3f, w3f, false, {0}, out3f)), Error::Ok);
  // transposed: weight [c, oc, k], out (5 - 1) * 2 + 2 + 1 + output_padding
  EValue* x1 = h.empty<double>({1, 2, 5});
  EValue* w1 = h.empty<double>({2, 3, 3});
  EValue* out12 = h.empty<double>({1, 3, 12});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x1, w1, true, {1}, out12)), Error::Ok);
  EValue* out13 = h.empty<double>({1, 3, 13});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x1, w1, true, {2}, out13)),
            Error::InvalidProgram);  // output_padding 2 >= stride 2 and dilation 1
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x1, w1, true, {0}, out12)),
            Error::InvalidProgram);  // out should be 11 long
}

// ---------------------------------------------------------------- pooling

struct PoolCase {
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;  // oh, ow checked against PyTorch
  bool ceil_mode;
};

// ATen's max pool: the first strict maximum of the in-bounds taps, NaN wins.
void ref_max_pool(const PoolCase& pc, const float* x, double* out, int64_t* index) {
  for (int64_t y = 0; y < pc.oh; ++y)
    for (int64_t z = 0; z < pc.ow; ++z) {
      double best = -INFINITY;
      int64_t at = -1;
      for (int64_t i = 0; i < pc.kh; ++i)
        for (int64_t j = 0; j < pc.kw; ++j) {
          const int64_t r = y * pc.sh - pc.ph + i * pc.dh, c = z * pc.sw - pc.pw + j * pc.dw;
          if (r < 0 || r >= pc.h || c < 0 || c >= pc.w) continue;
          if (at < 0 || x[r * pc.w + c] > best || std::isnan(x[r * pc.w + c])) {
            best = x[r * pc.w + c], at = r * pc.w + c;
          }
        }
      out[y * pc.ow + z] = best;
      index[y * pc.ow + z] = at;
    }
}

TEST(OpMaxPool2d, HandComputed2x2WindowsWithIndices) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 1, 4, 4}, {1, 5, 2, 0, 3, 4, 8, 7, 9, 0, 1, 1, 2, 6, 3, 5});
  EValue* out = h.empty<float>({1, 1, 2, 2});
  EValue* idx = h.empty<int64_t>({1, 1, 2, 2});
  ASSERT_EQ(h.call("aten::max_pool2d_with_indices", {x, h.ints({2, 2}), h.ints({}), h.ints({0}),
                                                     h.ints({1}), h.b(false), out, idx}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{5, 8, 9, 5}));
  EXPECT_EQ(h.values<int64_t>(idx), (std::vector<int64_t>{1, 6, 8, 15}));
}

TEST(OpMaxPool2d, TiesKeepTheFirstIndexAndNaNWins) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 2, 4}, {2, 2, 1, kNaN, 2, 2, 3, 3});
  EValue* out = h.empty<float>({1, 1, 2});
  EValue* idx = h.empty<int64_t>({1, 1, 2});
  ASSERT_EQ(h.call("aten::max_pool2d_with_indices", {x, h.ints({2, 2}), h.ints({2, 2}),
                                                     h.ints({0, 0}), h.ints({1, 1}), h.b(false),
                                                     out, idx}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out)[0], 2.f);
  EXPECT_TRUE(std::isnan(h.values<float>(out)[1]));
  EXPECT_EQ(h.values<int64_t>(idx), (std::vector<int64_t>{0, 3}));
}

TEST(OpMaxPool2d, MatchesReferenceWithPaddingDilationCeilModeAnd3dInput) {
  const PoolCase cases[] = {
      {6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 4, 4, true},   // ceil adds a window
      {5, 5, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, true},   // ceil's last window would start in padding
      {5, 7, 2, 2, 2, 2, 0, 0, 1, 1, 3, 4, true},
      {9, 8, 3, 2, 2, 1, 1, 1, 2, 3, 4, 7, false},  // dilation
      {4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4, 4, false},
  };
  for (const PoolCase& pc : cases) {
    KernelHarness h;
    const int64_t planes = 3;
    std::vector<float> x = random_floats(planes * pc.h * pc.w, 30);
    x[4] = kNaN;
    EValue* out = h.empty<float>({planes, pc.oh, pc.ow});
    EValue* idx = h.empty<int64_t>({planes, pc.oh, pc.ow});
    ASSERT_EQ(h.call("aten::max_pool2d_with_indices",
                     {h.tensor<float>({planes, pc.h, pc.w}, x), h.ints({pc.kh, pc.kw}),
                      h.ints({pc.sh, pc.sw}), h.ints({pc.ph, pc.pw}), h.ints({pc.dh, pc.dw}),
                      h.b(pc.ceil_mode), out, idx}),
              Error::Ok);
    const int64_t plane_out = pc.oh * pc.ow;
    std::vector<double> want(planes * plane_out);
    std::vector<int64_t> want_idx(planes * plane_out);
    for (int64_t p = 0; p < planes; ++p) {
      ref_max_pool(pc, x.data() + p * pc.h * pc.w, want.data() + p * plane_out,
                   want_idx.data() + p * plane_out);
    }
    std::vector<float> got = h.values<float>(out);
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << i;
      else EXPECT_EQ(got[i], static_cast<float>(want[i])) << i;
    }
    EXPECT_EQ(h.values<int64_t>(idx), want_idx);
  }
}

TEST(OpMaxPool2d, RejectsPaddingOverHalfKernelWrongOutAndIndicesDtype) {
  KernelHarness h;
  auto call = [&](int64_t pad, EValue* out, EValue* idx) {
    return h.prepare_only("aten::max_pool2d_with_indices",
                          {h.empty<float>({1, 2, 6, 6}), h.ints({3, 3}), h.ints({2, 2}),
                           h.ints({pad, pad}), h.ints({1, 1}), h.b(true), out, idx});
  };
  EXPECT_EQ(call(1, h.empty<float>({1, 2, 4, 4}), h.empty<int64_t>({1, 2, 4, 4})), Error::Ok);
  EXPECT_EQ(call(2, h.empty<float>({1, 2, 4, 4}), h.empty<int64_t>({1, 2, 4, 4})),
            Error::InvalidProgram);
  EXPECT_EQ(call(1, h.empty<float>({1, 2, 3, 3}), h.empty<int64_t>({1, 2, 3, 3})),
            Error::InvalidProgram);
  EXPECT_EQ(call(1, h.empty<float>({1, 2, 4, 4}), h.empty<int32_t>({1, 2, 4, 4})),
            Error::OperatorMissing);
}

TEST(OpAvgPool2d, HandComputedCeilModeWithPaddingCounted) {
  // torch.nn.functional.avg_pool2d(arange(25).view(1, 5, 5), 3, 2, 1, ceil_mode=True)
  KernelHarness h;
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[i] = float(i);
  EValue* out = h.empty<float>({1, 3, 3});
  ASSERT_EQ(h.call("aten::avg_pool2d", {h.tensor<float>({1, 5, 5}, x), h.ints({3}), h.ints({2}),
                                        h.ints({1}), h.b(true), h.b(true), h.none(), out}),
            Error::Ok);
  expect_close(h.values<float>(out),
               {12.0 / 9, 27.0 / 9, 16.0 / 6, 63.0 / 9, 108.0 / 9, 54.0 / 6, 48.0 / 6, 78.0 / 6,
                28.0 / 3});
}

TEST(OpAvgPool2d, MatchesReferenceForEachDivisorRule) {
  const int64_t hh = 7, ww = 6, k = 3, s = 2, p = 1, oh = 4, ow = 4;  // ceil_mode: 4 x 4
  std::vector<float> x = random_floats(2 * 2 * hh * ww, 31);
  for (int mode = 0; mode < 3; ++mode) {  // count_include_pad, exclude, divisor_override = 5
    KernelHarness h;
    EValue* out = h.empty<float>({2, 2, oh, ow});
    ASSERT_EQ(h.call("aten::avg_pool2d", {h.tensor<float>({2, 2, hh, ww}, x), h.ints({k, k}),
                                          h.ints({s, s}), h.ints({p, p}), h.b(true),
                                          h.b(mode == 0), mode == 2 ? h.i(5) : h.none(), out}),
              Error::Ok);
    std::vector<double> want;
    for (int64_t pl = 0; pl < 4; ++pl)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = 0;
          int64_t valid = 0, padded = 0;
          for (int64_t r = y * s - p; r < y * s - p + k; ++r)
            for (int64_t c = z * s - p; c < z * s - p + k; ++c) {
              if (r < hh + p && c < ww + p) ++padded;  // inside the padded input
              if (r < 0 || r >= hh || c < 0 || c >= ww) continue;
              sum += x[(pl * hh + r) * ww + c], ++valid;
            }
          want.push_back(valid == 0 ? 0.0 : sum / (mode == 2 ? 5 : mode == 0 ? padded : valid));
        }
    SCOPED_TRACE(::testing::Message() << "mode " << mode);
    expect_close(h.values<float>(out), want);
  }
}

TEST(OpAvgPool2d, RejectsZeroDivisorOverride) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::avg_pool2d", {h.empty<float>({1, 4, 4}), h.ints({2}), h.ints({}),
                                                h.ints({0}), h.b(false), h.b(true), h.i(0),
                                                h.empty<float>({1, 2, 2})}),
            Error::InvalidProgram);
}

// The dtypes eager's CPU kernels refuse stay refused at load (OperatorMissing).
TEST(OpPool2d, RefusesDtypesEagerRefuses) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::max_pool2d_with_indices",
                           {h.empty<bool>({1, 4, 4}), h.ints({2}), h.ints({}), h.ints({0}), h.ints({1}),
                            h.b(false), h.empty<bool>({1, 2, 2}), h.empty<int64_t>({1, 2, 2})}),
            Error::OperatorMissing);
  auto avg = [&](EValue* x, EValue* out) {
    return h.prepare_only("aten::avg_pool2d",
                          {x, h.ints({2}), h.ints({}), h.ints({0}), h.b(false), h.b(true), h.none(), out});
  };
  EXPECT_EQ(avg(h.empty<int32_t>({1, 4, 4}), h.empty<int32_t>({1, 2, 2})), Error::OperatorMissing);
  EXPECT_EQ(avg(h.empty<uint8_t>({1, 4, 4}), h.empty<uint8_t>({1, 2, 2})), Error::OperatorMissing);
  EXPECT_EQ(avg(h.empty<int64_t>({1, 4, 4}), h.empty<int64_t>({1, 2, 2})), Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::_adaptive_avg_pool2d", {h.empty<int64_t>({1, 4, 4}), h.ints({2, 2}),
                                                          h.empty<int64_t>({1, 2, 2})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::relu", {h.empty<bool>({3}), h.empty<bool>({3})}), Error::OperatorMissing);
}

TEST(OpAdaptiveAvgPool2d, MatchesStartEndIndexFormula) {
  const int64_t hh = 5, ww = 7, oh = 3, ow = 4;
  KernelHarness h;
  std::vector<float> x = random_floats(2 * 3 * hh * ww, 32);
  EValue* out = h.empty<float>({2, 3, oh, ow});
  ASSERT_EQ(h.call("aten::_adaptive_avg_pool2d",
                   {h.tensor<float>({2, 3, hh, ww}, x), h.ints({oh, ow}), out}),
            Error::Ok);
  // rows of output 0..2 over h = 5: [0, 2), [1, 4), [3, 5)
  const int64_t r0[] = {0, 1, 3}, r1[] = {2, 4, 5};
  // columns of output 0..3 over w = 7: [0, 2), [1, 4), [3, 6), [5, 7)
  const int64_t c0[] = {0, 1, 3, 5}, c1[] = {2, 4, 6, 7};
  std::vector<double> want;
  for (int64_t pl = 0; pl < 6; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        double sum = 0;
        for (int64_t r = r0[y]; r < r1[y]; ++r)
          for (int64_t c = c0[z]; c < c1[z]; ++c) sum += x[(pl * hh + r) * ww + c];
        want.push_back(sum / double((r1[y] - r0[y]) * (c1[z] - c0[z])));
      }
  expect_close(h.values<float>(out), want);
}

TEST(OpAdaptiveAvgPool2d, GlobalPoolOf3dInputIsPlaneMean) {
  KernelHarness h;
  EValue* out = h.empty<float>({2, 1, 1});
  ASSERT_EQ(h.call("aten::_adaptive_avg_pool2d",
                   {h.tensor<float>({2, 2, 2}, {1, 2, 3, 4, -1, -1, -1, 7}), h.ints({1, 1}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{2.5f, 1.f}));
}

TEST(OpAdaptiveAvgPool2d, RejectsWrongOutSizes) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::_adaptive_avg_pool2d",
                           {h.empty<float>({1, 2, 8, 8}), h.ints({2, 2}),
                            h.empty<float>({1, 2, 4, 4})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------- normalization

TEST(OpNativeLayerNorm, MatchesReferenceOverTwoTrailingDimsWithAffine) {
  const int64_t a = 3, b = 4, c = 5;
  std::vector<float> x = random_floats(a * b * c, 40), w = random_floats(b * c, 41),
                     bias = random_floats(b * c, 42);
  for (float& v : x) v = v * 3.f + 10.f;  // an offset mean tests the two-pass variance
  for (int affine = 0; affine < 2; ++affine) {
    KernelHarness h;
    EValue* out = h.empty<float>({a, b, c});
    EValue* mean = h.empty<float>({a, 1, 1});
    EValue* rstd = h.empty<float>({a, 1, 1});
    ASSERT_EQ(h.call("aten::native_layer_norm",
                     {h.tensor<float>({a, b, c}, x), h.ints({b, c}),
                      affine ? h.tensor<float>({b, c}, w) : h.none(),
                      affine ? h.tensor<float>({b, c}, bias) : h.none(), h.d(1e-5), out, mean,
                      rstd}),
              Error::Ok);
    std::vector<double> want, want_mean, want_rstd;
    for (int64_t i = 0; i < a; ++i) {
      double m = 0, v = 0;
      for (int64_t j = 0; j < b * c; ++j) m += x[i * b * c + j];
      m /= double(b * c);
      for (int64_t j = 0; j < b * c; ++j) v += (x[i * b * c + j] - m) * (x[i * b * c + j] - m);
      const double r = 1.0 / std::sqrt(v / double(b * c) + 1e-5);
      want_mean.push_back(m), want_rstd.push_back(r);
      for (int64_t j = 0; j < b * c; ++j) {
        const double y = (x[i * b * c + j] - m) * r;
        want.push_back(affine ? y * w[j] + bias[j] : y);
      }
    }
    expect_close(h.values<float>(out), want);
    expect_close(h.values<float>(mean), want_mean);
    expect_close(h.values<float>(rstd), want_rstd);
  }
}

TEST(OpNativeLayerNorm, RejectsShapeMismatchAndWrongStatSizes) {
  KernelHarness h;
  auto call = [&](std::vector<int64_t> shape, EValue* mean) {
    return h.prepare_only("aten::native_layer_norm",
                          {h.empty<float>({2, 3}), h.ints(shape), h.none(), h.none(), h.d(1e-5),
                           h.empty<float>({2, 3}), mean, h.empty<float>({2, 1})});
  };
  EXPECT_EQ(call({3}, h.empty<float>({2, 1})), Error::Ok);
  EXPECT_EQ(call({2}, h.empty<float>({2, 1})), Error::InvalidProgram);
  EXPECT_EQ(call({3}, h.empty<float>({2})), Error::InvalidProgram);
}

TEST(OpBatchNorm, MatchesReferenceFor4d3dAnd2dInputs) {
  const int64_t c = 3;
  std::vector<float> w = {0.5f, -1.f, 2.f}, b = {0.f, 1.f, -3.f}, mean = {0.1f, -0.2f, 3.f},
                     var = {1.f, 0.25f, 4.f};
  const std::vector<std::vector<int64_t>> shapes = {{2, c, 4, 5}, {2, c, 7}, {5, c}};
  for (const auto& shape : shapes) {
    for (int affine = 0; affine < 2; ++affine) {
      KernelHarness h;
      int64_t numel = 1, inner = 1;
      for (size_t i = 0; i < shape.size(); ++i) numel *= shape[i], inner *= i >= 2 ? shape[i] : 1;
      std::vector<float> x = random_floats(numel, 43);
      EValue* out = h.empty<float>(shape);
      ASSERT_EQ(h.call("aten::_native_batch_norm_legit_no_training",
                       {h.tensor<float>(shape, x), affine ? h.tensor<float>({c}, w) : h.none(),
                        affine ? h.tensor<float>({c}, b) : h.none(), h.tensor<float>({c}, mean),
                        h.tensor<float>({c}, var), h.d(0.1), h.d(1e-5), out,
                        h.empty<float>({0}), h.empty<float>({0})}),
                Error::Ok);
      std::vector<double> want(numel);
      for (int64_t i = 0; i < numel; ++i) {
        const int64_t ch = (i / inner) % c;
        const double y = (x[i] - mean[ch]) / std::sqrt(double(var[ch]) + 1e-5);
        want[i] = affine ? y * w[ch] + b[ch] : y;
      }
      expect_close(h.values<float>(out), want);
    }
  }
}

TEST(OpBatchNorm, RejectsNonEmptySaveMeanAndWrongChannelCount) {
  KernelHarness h;
  auto call = [&](EValue* running_mean, EValue* save_mean) {
    return h.prepare_only("aten::_native_batch_norm_legit_no_training",
                          {h.empty<float>({1, 2, 3}), h.none(), h.none(), running_mean,
                           h.empty<float>({2}), h.d(0.1), h.d(1e-5), h.empty<float>({1, 2, 3}),
                           save_mean, h.empty<float>({0})});
  };
  EXPECT_EQ(call(h.empty<float>({2}), h.empty<float>({0})), Error::Ok);
  EXPECT_EQ(call(h.empty<float>({2}), h.empty<float>({2})), Error::InvalidProgram);
  EXPECT_EQ(call(h.empty<float>({3}), h.empty<float>({0})), Error::InvalidProgram);
}

// ---------------------------------------------------------------- embedding

TEST(OpEmbedding, GathersRowsForInt64AndInt32Indices) {
  KernelHarness h;
  EValue* weight = h.tensor<float>({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  EValue* out64 = h.empty<float>({2, 2, 2});
  ASSERT_EQ(h.call("aten::embedding", {weight, h.tensor<int64_t>({2, 2}, {3, 0, 2, 3}), h.i(-1),
                                       h.b(false), h.b(false), out64}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out64), (std::vector<float>{30, 31, 0, 1, 20, 21, 30, 31}));
  EValue* out32 = h.empty<float>({3, 2});
  ASSERT_EQ(h.call("aten::embedding", {weight, h.tensor<int32_t>({3}, {1, 1, 2}), h.i(-1),
                                       h.b(false), h.b(false), out32}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out32), (std::vector<float>{10, 11, 10, 11, 20, 21}));
}

TEST(OpEmbedding, IndexOutOfRangeFailsAtRun) {
  KernelHarness h;
  EValue* weight = h.tensor<float>({2, 1}, {5, 6});
  for (int64_t bad : {2, -1}) {
    EValue* idx = h.tensor<int64_t>({2}, {0, bad});
    EXPECT_EQ(h.prepare_only("aten::embedding", {weight, idx, h.i(-1), h.b(false), h.b(false),
                                                 h.empty<float>({2, 1})}),
              Error::Ok);
    EXPECT_EQ(h.call("aten::embedding", {weight, idx, h.i(-1), h.b(false), h.b(false),
                                         h.empty<float>({2, 1})}),
              Error::ExecutionFailed);
  }
}

TEST(OpEmbedding, RejectsFloatIndicesAndWrongOut) {
  KernelHarness h;
  EValue* weight = h.empty<float>({4, 3});
  auto call = [&](EValue* idx, EValue* out) {
    return h.prepare_only("aten::embedding", {weight, idx, h.i(-1), h.b(false), h.b(false), out});
  };
  EXPECT_EQ(call(h.empty<float>({2}), h.empty<float>({2, 3})), Error::OperatorMissing);
  EXPECT_EQ(call(h.empty<int64_t>({2}), h.empty<float>({2, 4})), Error::InvalidProgram);
  EXPECT_EQ(call(h.empty<int64_t>({2}), h.empty<double>({2, 3})), Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
