// Tests of the portable layer norm, batch norm and embedding kernels.
// Expected values come from hand computation or from naive double-precision
// loops written here, never from the kernels themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"
#include "tests/cpp/random_util.h"

namespace tern {
namespace {

using test::KernelHarness;

using test::random_floats;

// Each element within tol * (max |ref| + |ref[i]|), the tolerance the kernels
// promise (tests/cpp/compare.h).
void expect_close(const std::vector<float>& got, const std::vector<double>& ref,
                  double tol = 1e-4) {
  EXPECT_TRUE(test::all_close(got, ref, tol));
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
