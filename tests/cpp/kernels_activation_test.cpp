// Tests of the portable activation kernels: relu, gelu, sigmoid, tanh,
// hardtanh, hardswish, _softmax, _log_softmax.
//
// Expected values are computed by hand on tiny inputs or by naive reference
// loops here in double precision (softmax by the textbook formula), never
// taken from the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "tests/cpp/elementwise_ref.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;
using namespace test::elementwise;

// ---------------------------------------------------------------------------
// activations

// Runs a unary activation prepare with extra args between self and out.
template <typename T>
std::vector<T> run_unary(KernelHarness& h, const char* prepare, const std::vector<float>& x,
                         std::vector<EValue*> extra = {}) {
  EValue* in = h.tensor<T>({static_cast<int64_t>(x.size())}, std::vector<T>(x.begin(), x.end()));
  EValue* out = h.empty<T>({static_cast<int64_t>(x.size())});
  std::vector<EValue*> args = {in};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(out);
  EXPECT_EQ(h.call(prepare, args), Error::Ok);
  return h.values<T>(out);
}

std::vector<double> map(const std::vector<float>& x, const std::function<double(double)>& f) {
  std::vector<double> r;
  for (float v : x) r.push_back(f(v));
  return r;
}

TEST(OpRelu, ZeroesNegativesAndPropagatesNan) {
  // torch.relu(tensor([-2., 0., 3., nan, -inf, inf])) == [0, 0, 3, nan, 0, inf].
  // Found by tests/python/test_opinfo.py (nn.functional.relu, extremal values).
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto v = run_unary<float>(h, "aten::relu", {-2, 0, 3, nan, -inf, inf});
  EXPECT_EQ(v[0], 0.f);
  EXPECT_EQ(v[1], 0.f);
  EXPECT_EQ(v[2], 3.f);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], 0.f);
  EXPECT_EQ(v[5], inf);
  EXPECT_EQ(run_unary<int64_t>(h, "aten::relu", {-5, 0, 7}), (std::vector<int64_t>{0, 0, 7}));
}

TEST(OpGelu, MatchesErfFormula) {
  KernelHarness h;
  auto x = random_floats(700, -8, 8, 5);
  expect_close(run_unary<float>(h, "aten::gelu", x, {h.str("none")}),
               map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
}

TEST(OpGelu, MatchesTanhApproximationInDouble) {
  KernelHarness h;
  auto x = random_floats(100, -8, 8, 6);
  const double k = std::sqrt(2 / M_PI);
  expect_close(run_unary<double>(h, "aten::gelu", x, {h.str("tanh")}), map(x, [&](double v) {
                 return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v)));
               }));
}

TEST(OpGelu, RejectsUnknownApproximationAndIntegers) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::gelu",
                           {h.tensor<float>({1}, {1}), h.str("fast"), h.empty<float>({1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::gelu",
                           {h.tensor<int64_t>({1}, {1}), h.str("none"), h.empty<int64_t>({1})}),
            Error::OperatorMissing);
}

TEST(OpSigmoid, MatchesLogisticIncludingExtremes) {
  KernelHarness h;
  auto x = random_floats(300, -20, 20, 7);
  x.push_back(-200);
  x.push_back(200);
  auto got = run_unary<float>(h, "aten::sigmoid", x);
  expect_close(got, map(x, [](double v) { return 1 / (1 + std::exp(-v)); }));
  EXPECT_EQ(got[300], 0.f);
  EXPECT_EQ(got[301], 1.f);
}

TEST(OpSigmoid, PromotesIntegersToFloat32) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::sigmoid", {h.tensor<int64_t>({3}, {0, 1, -2}), out}), Error::Ok);
  expect_close(h.values<float>(out), {0.5, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(2.0))});
  EXPECT_EQ(h.prepare_only("aten::sigmoid", {h.tensor<int64_t>({1}, {0}), h.empty<int64_t>({1})}),
            Error::InvalidProgram);
}

TEST(OpTanh, MatchesReferenceForFloatAndDouble) {
  KernelHarness h;
  auto x = random_floats(300, -6, 6, 8);
  expect_close(run_unary<float>(h, "aten::tanh", x), map(x, [](double v) { return std::tanh(v); }));
  expect_close(run_unary<double>(h, "aten::tanh", x), map(x, [](double v) { return std::tanh(v); }));
}

TEST(OpTanh, RejectsWrongOutShape) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::tanh", {h.tensor<float>({2}, {1, 2}), h.empty<float>({2, 1})}),
            Error::InvalidProgram);
}

TEST(OpHardtanh, ClampsToDefaultAndCustomLimits) {
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto d = run_unary<float>(h, "aten::hardtanh", {-3, -1, 0.5f, 1, 4}, {h.i(-1), h.i(1)});
  EXPECT_EQ(d, (std::vector<float>{-1, -1, 0.5f, 1, 1}));
  auto c = run_unary<float>(h, "aten::hardtanh", {-3, 0.5f, 7, nan}, {h.d(0), h.d(6)});
  EXPECT_EQ(c[0], 0);
  EXPECT_EQ(c[1], 0.5f);
  EXPECT_EQ(c[2], 6);
  EXPECT_TRUE(std::isnan(c[3]));
}

TEST(OpHardtanh, CastsLimitsToIntegerDtype) {
  // torch: hardtanh(int64 [1, 5, -3], 0.5, 2.5) == [1, 2, 0]
  KernelHarness h;
  auto v = run_unary<int64_t>(h, "aten::hardtanh", {1, 5, -3}, {h.d(0.5), h.d(2.5)});
  EXPECT_EQ(v, (std::vector<int64_t>{1, 2, 0}));
}

TEST(OpHardtanh, RejectsBoolAndOverflowingLimits) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::hardtanh", {h.bool_tensor({1}, {1}), h.i(-1), h.i(1),
                                              h.empty_of(ScalarType::Bool, {1})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::hardtanh", {h.tensor<int8_t>({1}, {1}), h.d(-1e10), h.i(1),
                                              h.empty<int8_t>({1})}),
            Error::InvalidProgram);
}

TEST(OpHardswish, MatchesPiecewiseDefinition) {
  KernelHarness h;
  std::vector<float> x = {-5, -3, -1.5f, 0, 1, 3, 4};
  auto got = run_unary<float>(h, "aten::hardswish", x);
  expect_close(got, map(x, [](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }));
  EXPECT_EQ(h.prepare_only("aten::hardswish", {h.tensor<int32_t>({1}, {1}), h.empty<int32_t>({1})}),
            Error::OperatorMissing);
}

// ---------------------------------------------------------------------------
// softmax, log_softmax

// Softmax (or log-softmax) of x [sizes] along dim d, in double.
std::vector<double> ref_softmax(const std::vector<float>& x, const std::vector<int64_t>& sizes,
                                int d, bool log) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= sizes[i];
  for (size_t i = d + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t n = sizes[d];
  std::vector<double> r(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < inner; ++c) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + c; };
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, double(x[at(k)]));
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x[at(k)] - mx);
      for (int64_t k = 0; k < n; ++k) {
        r[at(k)] = log ? x[at(k)] - mx - std::log(sum) : std::exp(x[at(k)] - mx) / sum;
      }
    }
  }
  return r;
}

void check_softmax(const char* prepare, bool log, const std::vector<int64_t>& sizes, int64_t dim,
                   float scale) {
  KernelHarness h;
  auto x = random_floats(numel_of(sizes), -scale, scale, 9);
  EValue* out = h.empty<float>(sizes);
  ASSERT_EQ(h.call(prepare, {h.tensor<float>(sizes, x), h.i(dim), h.b(false), out}), Error::Ok);
  const int d = static_cast<int>(dim < 0 ? dim + static_cast<int64_t>(sizes.size()) : dim);
  expect_close(h.values<float>(out), ref_softmax(x, sizes, d, log));
}

TEST(OpSoftmax, NormalizesLastDim) { check_softmax("aten::_softmax", false, {3, 7}, 1, 4); }

TEST(OpSoftmax, NormalizesMiddleAndFirstDimsWithManyColumns) {
  check_softmax("aten::_softmax", false, {2, 5, 70}, 1, 4);  // inner 70: more than one column block
  check_softmax("aten::_softmax", false, {4, 3, 2}, 0, 4);
  check_softmax("aten::_softmax", false, {2, 3, 4, 5}, -3, 4);
}

TEST(OpSoftmax, IsStableForLargeInputs) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::_softmax", {h.tensor<float>({3}, {1000, 1000, 999}), h.i(-1), h.b(false),
                                     out}),
            Error::Ok);
  const double e = std::exp(-1.0);
  expect_close(h.values<float>(out), {1 / (2 + e), 1 / (2 + e), e / (2 + e)});
  check_softmax("aten::_softmax", false, {4, 33}, -1, 500);
  check_softmax("aten::_softmax", false, {3, 10, 70}, 1, 500);  // along a middle dim
}

TEST(OpSoftmax, ZeroDimTensorIsOne) {
  KernelHarness h;
  EValue* out = h.empty<double>({});
  ASSERT_EQ(h.call("aten::_softmax", {h.tensor<double>({}, {-3}), h.i(0), h.b(false), out}),
            Error::Ok);
  EXPECT_EQ(h.values<double>(out)[0], 1.0);
}

TEST(OpSoftmax, RejectsHalfToFloatBadDimAndIntegers) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(h.prepare_only("aten::_softmax", {x, h.i(1), h.b(true), h.empty<float>({2, 2})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::_softmax", {x, h.i(2), h.b(false), h.empty<float>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::_softmax", {x, h.i(-3), h.b(false), h.empty<float>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::_softmax", {h.tensor<int64_t>({2}, {1, 2}), h.i(0), h.b(false),
                                             h.empty<int64_t>({2})}),
            Error::OperatorMissing);
}

TEST(OpLogSoftmax, MatchesReferenceAlongAnyDim) {
  check_softmax("aten::_log_softmax", true, {3, 7}, -1, 4);
  check_softmax("aten::_log_softmax", true, {2, 9, 65}, 1, 4);
  check_softmax("aten::_log_softmax", true, {5, 2, 3}, 0, 30);
}

TEST(OpLogSoftmax, IsStableForLargeInputs) {
  KernelHarness h;
  EValue* out = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::_log_softmax", {h.tensor<float>({2}, {-1000, 1000}), h.i(0), h.b(false),
                                         out}),
            Error::Ok);
  auto v = h.values<float>(out);
  EXPECT_NEAR(v[0], -2000, 1e-3);
  EXPECT_NEAR(v[1], 0, 1e-6);
  check_softmax("aten::_log_softmax", true, {3, 10, 70}, 1, 500);
}

TEST(OpLogSoftmax, RejectsOutOfAnotherDtype) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::_log_softmax", {h.tensor<float>({2}, {1, 2}), h.i(0), h.b(false),
                                                 h.empty<double>({2})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
