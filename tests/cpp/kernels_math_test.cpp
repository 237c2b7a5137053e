// Tests of the portable math kernels (batch 2): exp, exp2, log, sqrt, rsqrt,
// reciprocal, sin, cos, erf, abs, neg, floor, ceil, round, pow (three
// overloads), maximum, minimum, clamp, leaky_relu, elu, silu, softplus, mish.
//
// Expected values are written out by hand on tiny inputs, or computed here by
// naive double-precision formulas (std:: functions on double, broadcast
// indices by division), never taken from the kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

// ---------------------------------------------------------------------------
// Reference helpers

// Deterministic pseudo-random values in [lo, hi).
std::vector<float> random_floats(int64_t n, float lo, float hi, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = lo + (hi - lo) * static_cast<float>(x >> 8) / static_cast<float>(1 << 24);
  }
  return v;
}

// Each got[i] is want[i] within rel * (|want[i]| + min(1, max |want|)): an
// absolute floor of `rel` for outputs around 1 and more, scaled down with
// them when all are far below 1. NaN must be NaN and an infinity that same
// infinity (tests/cpp/compare.h).
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double rel = 1e-5) {
  EXPECT_TRUE(test::all_close(got, want, rel, rel * std::min(1.0, test::max_finite_magnitude(want))));
}

template <typename T, typename F>
std::vector<double> map_double(const std::vector<T>& xs, F f) {
  std::vector<double> r;
  for (T x : xs) r.push_back(f(static_cast<double>(x)));
  return r;
}

// Runs a one-input kernel with args [x, out] and returns out as double.
template <typename In, typename Out>
std::vector<Out> run_unary(const char* prepare, std::vector<int64_t> sizes, std::vector<In> xs) {
  KernelHarness h;
  EValue* out = h.empty<Out>(sizes);
  EXPECT_EQ(h.call(prepare, {h.tensor<In>(sizes, xs), out}), Error::Ok);
  return h.values<Out>(out);
}

struct UnaryFloatCase {
  const char* name;
  const char* prepare;
  double (*ref)(double);
  float lo, hi;  // input range
};

const UnaryFloatCase kPromotingOps[] = {
    {"exp", "aten::exp", [](double x) { return std::exp(x); }, -10, 10},
    {"exp2", "aten::exp2", [](double x) { return std::exp2(x); }, -10, 10},
    {"log", "aten::log", [](double x) { return std::log(x); }, 0.01f, 100},
    {"sqrt", "aten::sqrt", [](double x) { return std::sqrt(x); }, 0, 100},
    {"rsqrt", "aten::rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.01f, 100},
    {"reciprocal", "aten::reciprocal", [](double x) { return 1 / x; }, -10, 10},
    {"sin", "aten::sin", [](double x) { return std::sin(x); }, -10, 10},
    {"cos", "aten::cos", [](double x) { return std::cos(x); }, -10, 10},
    {"erf", "aten::erf", [](double x) { return std::erf(x); }, -4, 4},
};

// ---------------------------------------------------------------------------
// exp, exp2, log, sqrt, rsqrt, reciprocal, sin, cos, erf

TEST(OpUnaryFloat, MatchesDoubleReferenceOnFloat32AcrossChunks) {
  for (const auto& c : kPromotingOps) {
    SCOPED_TRACE(c.name);
    auto xs = random_floats(3 * 301, c.lo, c.hi, 7);  // 903 elements: several chunks and a tail
    expect_close(run_unary<float, float>(c.prepare, {3, 301}, xs), map_double(xs, c.ref));
  }
}

TEST(OpUnaryFloat, ComputesFloat64InDouble) {
  for (const auto& c : kPromotingOps) {
    SCOPED_TRACE(c.name);
    auto xs32 = random_floats(10, c.lo, c.hi, 3);
    std::vector<double> xs(xs32.begin(), xs32.end());
    expect_close(run_unary<double, double>(c.prepare, {10}, xs), map_double(xs, c.ref), 1e-12);
  }
}

TEST(OpUnaryFloat, GivesFloat32ForIntegerAndBoolInputs) {
  for (const auto& c : kPromotingOps) {
    SCOPED_TRACE(c.name);
    std::vector<int32_t> xs = {1, 2, 3, 7};
    expect_close(run_unary<int32_t, float>(c.prepare, {2, 2}, xs), map_double(xs, c.ref));
    KernelHarness h;
    EValue* out = h.empty<float>({2});
    ASSERT_EQ(h.call(c.prepare, {h.bool_tensor({2}, {1, 1}), out}), Error::Ok);
    expect_close(h.values<float>(out), {c.ref(1), c.ref(1)});
  }
}

TEST(OpUnaryFloat, HandValues) {
  expect_close(run_unary<float, float>("aten::exp", {3}, {0, 1, -kInfF}), {1, M_E, 0});
  expect_close(run_unary<float, float>("aten::exp2", {3}, {3, -1, 0.5f}), {8, 0.5, M_SQRT2});
  expect_close(run_unary<float, float>("aten::log", {4}, {1, 0, -1, kInfF}),
               {0, -kInf, kNaN, kInf});
  expect_close(run_unary<float, float>("aten::sqrt", {3}, {4, -1, kInfF}), {2, kNaN, kInf});
  expect_close(run_unary<float, float>("aten::rsqrt", {3}, {4, 0, -1}), {0.5, kInf, kNaN});
  expect_close(run_unary<float, float>("aten::reciprocal", {3}, {4, 0, -0.0f}),
               {0.25, kInf, -kInf});
  expect_close(run_unary<float, float>("aten::sin", {2}, {0, float(M_PI / 2)}), {0, 1});
  expect_close(run_unary<float, float>("aten::cos", {2}, {0, float(M_PI)}), {1, -1});
  expect_close(run_unary<float, float>("aten::erf", {3}, {0, kInfF, -kInfF}), {0, 1, -1});
  auto s = run_unary<float, float>("aten::sqrt", {1}, {-0.0f});
  EXPECT_TRUE(s[0] == 0 && std::signbit(s[0])) << "sqrt(-0) is -0";
}

TEST(OpUnaryFloat, HandlesZeroDimAndEmptyTensors) {
  expect_close(run_unary<float, float>("aten::exp", {}, {0}), {1});
  EXPECT_TRUE((run_unary<float, float>("aten::exp", {0, 3}, {}).empty()));
}

TEST(OpUnaryFloat, RejectsOutDtypeOtherThanPromoted) {
  KernelHarness h;
  // float32 in -> float32 out, int64 in -> float32 out (not float64, not int64).
  EXPECT_EQ(h.prepare_only("aten::exp", {h.tensor<float>({1}, {1}), h.empty<double>({1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::log", {h.tensor<int64_t>({1}, {1}), h.empty<int64_t>({1})}),
            Error::InvalidProgram);
}

TEST(OpUnaryFloat, RejectsWrongOutShapeArgCountAndTakesFloat16) {
  for (const auto& c : kPromotingOps) {
    SCOPED_TRACE(c.name);
    KernelHarness h;
    EValue* x = h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(h.prepare_only(c.prepare, {x, h.empty<float>({3, 2})}), Error::InvalidProgram);
    EXPECT_EQ(h.prepare_only(c.prepare, {x}), Error::InvalidProgram);
    EXPECT_EQ(h.prepare_only(c.prepare, {h.d(1.0), h.empty<float>({})}), Error::InvalidProgram);
    EValue* half = h.empty_of(ScalarType::Float16, {2});
    EXPECT_EQ(h.prepare_only(c.prepare, {half, h.empty_of(ScalarType::Float16, {2})}), Error::Ok);
  }
}

// ---------------------------------------------------------------------------
// abs, neg

TEST(OpAbs, TakesMagnitudeInEachDtype) {
  expect_close(run_unary<float, float>("aten::abs", {4}, {-1.5f, 2, -0.0f, -kInfF}),
               {1.5, 2, 0, kInf});
  EXPECT_EQ((run_unary<int32_t, int32_t>("aten::abs", {3}, {-7, 0, 7})),
            (std::vector<int32_t>{7, 0, 7}));
  EXPECT_EQ((run_unary<double, double>("aten::abs", {1}, {-2.25})), (std::vector<double>{2.25}));
  EXPECT_EQ((run_unary<uint8_t, uint8_t>("aten::abs", {2}, {200, 0})),
            (std::vector<uint8_t>{200, 0}));
}

TEST(OpAbs, MostNegativeIntegerWrapsToItselfLikeTorch) {
  EXPECT_EQ((run_unary<int32_t, int32_t>("aten::abs", {1}, {INT32_MIN})),
            (std::vector<int32_t>{INT32_MIN}));
  EXPECT_EQ((run_unary<int8_t, int8_t>("aten::abs", {2}, {-128, -127})),
            (std::vector<int8_t>{-128, 127}));
}

TEST(OpAbs, RejectsBoolAndOutDtypeChange) {
  KernelHarness h;
  EXPECT_EQ(
      h.prepare_only("aten::abs", {h.bool_tensor({1}, {1}), h.empty_of(ScalarType::Bool, {1})}),
      Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::abs", {h.tensor<int32_t>({1}, {1}), h.empty<float>({1})}),
            Error::InvalidProgram);
}

TEST(OpNeg, NegatesFloatAndWrapsIntegers) {
  expect_close(run_unary<float, float>("aten::neg", {3}, {1.5f, -2, 0}), {-1.5, 2, 0});
  EXPECT_EQ((run_unary<int64_t, int64_t>("aten::neg", {2}, {5, INT64_MIN})),
            (std::vector<int64_t>{-5, INT64_MIN}));
  EXPECT_EQ((run_unary<uint8_t, uint8_t>("aten::neg", {3}, {1, 2, 0})),
            (std::vector<uint8_t>{255, 254, 0}));
}

TEST(OpNeg, RejectsBool) {
  KernelHarness h;
  EXPECT_EQ(
      h.prepare_only("aten::neg", {h.bool_tensor({1}, {1}), h.empty_of(ScalarType::Bool, {1})}),
      Error::OperatorMissing);
}

// ---------------------------------------------------------------------------
// floor, ceil, round

TEST(OpFloorCeil, RoundDownAndUp) {
  const std::vector<float> xs = {-1.5f, -0.5f, 0.5f, 1.5f, 2, -kInfF};
  expect_close(run_unary<float, float>("aten::floor", {6}, xs), {-2, -1, 0, 1, 2, -kInf});
  expect_close(run_unary<float, float>("aten::ceil", {6}, xs), {-1, -0.0, 1, 2, 2, -kInf});
  EXPECT_EQ((run_unary<double, double>("aten::floor", {1}, {-0.25})), (std::vector<double>{-1}));
}

TEST(OpFloorCeil, CopyIntegersUnchanged) {
  const std::vector<int64_t> xs = {-3, 0, INT64_MAX};
  EXPECT_EQ((run_unary<int64_t, int64_t>("aten::floor", {3}, xs)), xs);
  EXPECT_EQ((run_unary<int64_t, int64_t>("aten::ceil", {3}, xs)), xs);
  EXPECT_EQ((run_unary<uint8_t, uint8_t>("aten::ceil", {2}, {0, 255})),
            (std::vector<uint8_t>{0, 255}));
}

TEST(OpRound, RoundsHalfToEven) {
  const std::vector<float> xs = {0.5f,  1.5f,       2.5f,        -0.5f, -1.5f,
                                 -2.5f, 2.4999998f, 0.49999997f, -0.4f, 3.7f};
  expect_close(run_unary<float, float>("aten::round", {10}, xs),
               {0, 2, 2, -0.0, -2, -2, 2, 0, -0.0, 4});
  EXPECT_EQ((run_unary<double, double>("aten::round", {3}, {4.5, 5.5, -7.5})),
            (std::vector<double>{4, 6, -8}));
}

TEST(OpRound, KeepsLargeInfiniteNaNAndSignedZero) {
  auto r = run_unary<float, float>("aten::round", {5}, {8388609.0f, 1e30f, kInfF, kNaNF, -0.25f});
  expect_close(r, {8388609.0, 1e30, kInf, kNaN, 0});
  EXPECT_TRUE(std::signbit(r[4])) << "round(-0.25) is -0, as torch";
}

TEST(OpRound, CopiesIntegersAndRejectsBool) {
  EXPECT_EQ((run_unary<int32_t, int32_t>("aten::round", {2}, {-5, 5})),
            (std::vector<int32_t>{-5, 5}));
  KernelHarness h;
  for (const char* p : {"aten::round", "aten::floor", "aten::ceil"}) {
    EXPECT_EQ(h.prepare_only(p, {h.bool_tensor({1}, {1}), h.empty_of(ScalarType::Bool, {1})}),
              Error::OperatorMissing);
    EXPECT_EQ(h.prepare_only(p, {h.tensor<int32_t>({1}, {1}), h.empty<float>({1})}),
              Error::InvalidProgram);
  }
}

// ---------------------------------------------------------------------------
// pow

// self ** exponent (a Scalar) with args [self, exponent, out].
template <typename In, typename Out>
std::vector<Out> run_pow_scalar(std::vector<In> xs, EValue* (*exponent)(KernelHarness&)) {
  KernelHarness h;
  const int64_t n = static_cast<int64_t>(xs.size());
  EValue* out = h.empty<Out>({n});
  EXPECT_EQ(h.call("aten::pow.Tensor_Scalar", {h.tensor<In>({n}, xs), exponent(h), out}),
            Error::Ok);
  return h.values<Out>(out);
}

TEST(OpPow, TensorScalarMatchesStdPowForSpecialAndGeneralExponents) {
  const auto xs = random_floats(600, 0.1f, 4, 11);
  for (double e : {2.0, 3.0, -2.0, 0.5, -0.5, -1.0, 2.5, -1.3, 0.0, 1.0}) {
    SCOPED_TRACE(e);
    KernelHarness h;
    EValue* out = h.empty<float>({600});
    ASSERT_EQ(h.call("aten::pow.Tensor_Scalar", {h.tensor<float>({600}, xs), h.d(e), out}),
              Error::Ok);
    expect_close(h.values<float>(out), map_double(xs, [e](double x) { return std::pow(x, e); }));
  }
}

TEST(OpPow, TensorScalarEdgeValuesFollowTorch) {
  // 0.5 is sqrt: (-0) ** 0.5 = -0 and (-inf) ** 0.5 = NaN (std::pow gives +0, +inf).
  auto r = run_pow_scalar<float, float>({-0.0f, -kInfF, -4, 9},
                                        [](KernelHarness& h) { return h.d(0.5); });
  expect_close(r, {0, kNaN, kNaN, 3});
  EXPECT_TRUE(std::signbit(r[0]));
  expect_close(
      run_pow_scalar<float, float>({-0.0f, 0, -2}, [](KernelHarness& h) { return h.i(-1); }),
      {-kInf, kInf, -0.5});
  expect_close(run_pow_scalar<float, float>({kNaNF, 0}, [](KernelHarness& h) { return h.i(0); }),
               {1, 1});
  expect_close(run_pow_scalar<float, float>({-2, 3}, [](KernelHarness& h) { return h.d(2.5); }),
               {kNaN, std::pow(3.0, 2.5)});
}

TEST(OpPow, TensorScalarIntegersAreExactAndWrap) {
  EXPECT_EQ(
      (run_pow_scalar<int32_t, int32_t>({-3, 0, 2, 5}, [](KernelHarness& h) { return h.i(3); })),
      (std::vector<int32_t>{-27, 0, 8, 125}));
  EXPECT_EQ((run_pow_scalar<int32_t, int32_t>({0, 7}, [](KernelHarness& h) { return h.i(0); })),
            (std::vector<int32_t>{1, 1}));
  uint64_t want = 1;  // 3 ** 50 mod 2^64, read as int64
  for (int i = 0; i < 50; ++i) want *= 3;
  EXPECT_EQ((run_pow_scalar<int64_t, int64_t>({3}, [](KernelHarness& h) { return h.i(50); }))[0],
            static_cast<int64_t>(want));
  EXPECT_EQ((run_pow_scalar<uint8_t, uint8_t>({3, 16}, [](KernelHarness& h) { return h.i(2); })),
            (std::vector<uint8_t>{9, 0}));  // 256 wraps to 0
}

TEST(OpPow, TensorScalarPromotesLikeTorch) {
  // int ** 0.5 -> float32; bool ** 2 -> int64 (torch.square on bool).
  expect_close(run_pow_scalar<int32_t, float>({4, 2}, [](KernelHarness& h) { return h.d(0.5); }),
               {2, M_SQRT2});
  KernelHarness h;
  EValue* out = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::pow.Tensor_Scalar", {h.bool_tensor({2}, {1, 0}), h.i(2), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(out), (std::vector<int64_t>{1, 0}));
}

TEST(OpPow, TensorScalarRejectsNegativeIntegerExponentOverflowAndBool) {
  KernelHarness h;
  EValue* xi = h.tensor<int32_t>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::pow.Tensor_Scalar", {xi, h.i(-1), h.empty<int32_t>({2})}),
            Error::InvalidProgram);
  EValue* x8 = h.tensor<int8_t>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::pow.Tensor_Scalar", {x8, h.i(300), h.empty<int8_t>({2})}),
            Error::InvalidProgram);
  EValue* xb = h.bool_tensor({2}, {1, 0});
  EXPECT_EQ(
      h.prepare_only("aten::pow.Tensor_Scalar", {xb, h.b(true), h.empty_of(ScalarType::Bool, {2})}),
      Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::pow.Tensor_Scalar", {xi, h.d(0.5), h.empty<int32_t>({2})}),
            Error::InvalidProgram);  // out must be float32
}

TEST(OpPow, TensorTensorBroadcastsFloat) {
  KernelHarness h;
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {2, 0.5f, -1};
  EValue* out = h.empty<float>({2, 3});
  ASSERT_EQ(
      h.call("aten::pow.Tensor_Tensor", {h.tensor<float>({2, 3}, a), h.tensor<float>({3}, b), out}),
      Error::Ok);
  expect_close(h.values<float>(out), {1, std::sqrt(2.0), 1 / 3.0, 16, std::sqrt(5.0), 1 / 6.0});
}

TEST(OpPow, TensorTensorNegativeIntegerExponentsGiveAtenValues) {
  KernelHarness h;
  EValue* out = h.empty<int64_t>({6});
  ASSERT_EQ(
      h.call("aten::pow.Tensor_Tensor", {h.tensor<int64_t>({6}, {1, -1, -1, 2, 0, -3}),
                                         h.tensor<int64_t>({6}, {-1, -2, -3, -1, -1, 3}), out}),
      Error::Ok);
  EXPECT_EQ(h.values<int64_t>(out), (std::vector<int64_t>{1, 1, -1, 0, 0, -27}));
}

TEST(OpPow, TensorTensorPromotesIntBaseWithFloatExponent) {
  KernelHarness h;
  EValue* out = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::pow.Tensor_Tensor",
                   {h.tensor<int32_t>({2}, {4, 9}), h.tensor<float>({}, {0.5f}), out}),
            Error::Ok);
  expect_close(h.values<float>(out), {2, 3});
}

TEST(OpPow, TensorTensorRejectsBoolAndBadBroadcast) {
  KernelHarness h;
  EValue* b = h.bool_tensor({2}, {1, 0});
  EXPECT_EQ(h.prepare_only("aten::pow.Tensor_Tensor", {b, b, h.empty_of(ScalarType::Bool, {2})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::pow.Tensor_Tensor",
                           {h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                            h.tensor<float>({2}, {1, 2}), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
}

TEST(OpPow, ScalarBaseRaisesToTensor) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::pow.Scalar", {h.d(2.0), h.tensor<float>({3}, {3, -1, 0.5f}), out}),
            Error::Ok);
  expect_close(h.values<float>(out), {8, 0.5, M_SQRT2});
  EValue* out_i = h.empty<int32_t>({3});  // int 2 ** int32 tensor -> int32; 2 ** -1 -> 0
  ASSERT_EQ(h.call("aten::pow.Scalar", {h.i(2), h.tensor<int32_t>({3}, {10, -1, 0}), out_i}),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(out_i), (std::vector<int32_t>{1024, 0, 1}));
}

TEST(OpPow, ScalarOverloadRejectsTensorSelf) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1}, {2});
  EXPECT_EQ(h.prepare_only("aten::pow.Scalar", {x, x, h.empty<float>({1})}), Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// maximum, minimum

TEST(OpMaximumMinimum, BroadcastAndMatchReference) {
  KernelHarness h;
  const std::vector<float> a = {1, -2, 3, 4, -5, 6}, b = {0, 0.5f, 5};  // [2, 3] with [3]
  EValue* mx = h.empty<float>({2, 3});
  EValue* mn = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::maximum", {h.tensor<float>({2, 3}, a), h.tensor<float>({3}, b), mx}),
            Error::Ok);
  ASSERT_EQ(h.call("aten::minimum", {h.tensor<float>({2, 3}, a), h.tensor<float>({3}, b), mn}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(mx), (std::vector<float>{1, 0.5f, 5, 4, 0.5f, 6}));
  EXPECT_EQ(h.values<float>(mn), (std::vector<float>{0, -2, 3, 0, -5, 5}));
}

TEST(OpMaximumMinimum, PropagateNaNFromEitherSide) {
  for (const char* p : {"aten::maximum", "aten::minimum"}) {
    KernelHarness h;
    EValue* out = h.empty<float>({3});
    ASSERT_EQ(
        h.call(p, {h.tensor<float>({3}, {kNaNF, 1, 2}), h.tensor<float>({3}, {1, kNaNF, 2}), out}),
        Error::Ok);
    expect_close(h.values<float>(out), {kNaN, kNaN, 2});
  }
}

TEST(OpMaximumMinimum, PromoteIntegersAndHandleBool) {
  KernelHarness h;
  EValue* out = h.empty<int16_t>({2});  // int8 with uint8 -> int16
  ASSERT_EQ(h.call("aten::maximum",
                   {h.tensor<int8_t>({2}, {1, -1}), h.tensor<uint8_t>({2}, {200, 0}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int16_t>(out), (std::vector<int16_t>{200, 0}));
  EValue* bmax = h.empty_of(ScalarType::Bool, {4});
  EValue* bmin = h.empty_of(ScalarType::Bool, {4});
  EValue* x = h.bool_tensor({4}, {0, 0, 1, 1});
  EValue* y = h.bool_tensor({4}, {0, 1, 0, 1});
  ASSERT_EQ(h.call("aten::maximum", {x, y, bmax}), Error::Ok);
  ASSERT_EQ(h.call("aten::minimum", {x, y, bmin}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(bmax), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(h.values<uint8_t>(bmin), (std::vector<uint8_t>{0, 0, 0, 1}));
  EValue* fo = h.empty<float>({2});  // int64 tensor with a float32 0-d tensor -> float32
  ASSERT_EQ(
      h.call("aten::minimum", {h.tensor<int64_t>({2}, {1, 5}), h.tensor<float>({}, {2.5f}), fo}),
      Error::Ok);
  EXPECT_EQ(h.values<float>(fo), (std::vector<float>{1, 2.5f}));
}

TEST(OpMaximumMinimum, RejectOutDtypeAndShapeMismatch) {
  KernelHarness h;
  EValue* a = h.tensor<int32_t>({2}, {1, 2});
  EValue* f = h.tensor<float>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::maximum", {a, f, h.empty<int32_t>({2})}), Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::minimum",
                           {a, h.tensor<int32_t>({3}, {1, 2, 3}), h.empty<int32_t>({3})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// clamp

TEST(OpClamp, ClampsFloatWithOneOrBothBounds) {
  const std::vector<float> xs = {-3, -0.5f, 0.25f, 2, kNaNF};
  struct Case {
    EValue* (*lo)(KernelHarness&);
    EValue* (*hi)(KernelHarness&);
    std::vector<double> want;
  };
  const Case cases[] = {
      {[](KernelHarness& h) { return h.d(-1); },
       [](KernelHarness& h) { return h.i(1); },
       {-1, -0.5, 0.25, 1, kNaN}},
      {[](KernelHarness& h) { return h.d(0); },
       [](KernelHarness& h) { return h.none(); },
       {0, 0, 0.25, 2, kNaN}},
      {[](KernelHarness& h) { return h.none(); },
       [](KernelHarness& h) { return h.d(0); },
       {-3, -0.5, 0, 0, kNaN}},
      {[](KernelHarness& h) { return h.i(6); },
       [](KernelHarness& h) { return h.i(4); },
       {4, 4, 4, 4, kNaN}},  // min > max
  };
  for (const Case& c : cases) {
    KernelHarness h;
    EValue* out = h.empty<float>({5});
    ASSERT_EQ(h.call("aten::clamp", {h.tensor<float>({5}, xs), c.lo(h), c.hi(h), out}), Error::Ok);
    expect_close(h.values<float>(out), c.want);
  }
}

TEST(OpClamp, NaNBoundGivesNaNLikeTorch) {
  KernelHarness h;
  EValue* out = h.empty<double>({2});
  ASSERT_EQ(h.call("aten::clamp", {h.tensor<double>({2}, {0.5, -1}), h.d(kNaN), h.d(1), out}),
            Error::Ok);
  expect_close(h.values<double>(out), {kNaN, kNaN});
}

TEST(OpClamp, IntegersStayExact) {
  KernelHarness h;
  EValue* out = h.empty<int64_t>({4});
  const int64_t big = (int64_t(1) << 53) + 1;
  ASSERT_EQ(h.call("aten::clamp",
                   {h.tensor<int64_t>({4}, {-big, 0, big, 5}), h.i(-big + 2), h.i(big - 2), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(out), (std::vector<int64_t>{-big + 2, 0, big - 2, 5}));
  EValue* out8 = h.empty<uint8_t>({3});
  ASSERT_EQ(
      h.call("aten::clamp", {h.tensor<uint8_t>({3}, {1, 100, 250}), h.none(), h.i(200), out8}),
      Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out8), (std::vector<uint8_t>{1, 100, 200}));
}

TEST(OpClamp, PromotesLikeTorch) {
  KernelHarness h;
  EValue* f = h.empty<float>({3});  // int32 clamped to float bounds -> float32
  ASSERT_EQ(h.call("aten::clamp", {h.tensor<int32_t>({3}, {-3, 1, 2}), h.d(0.5), h.d(1.5), f}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(f), (std::vector<float>{0.5f, 1, 1.5f}));
  EValue* l = h.empty<int64_t>({2});  // bool clamped to ints -> int64
  ASSERT_EQ(h.call("aten::clamp", {h.bool_tensor({2}, {1, 0}), h.i(0), h.i(1), l}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(l), (std::vector<int64_t>{1, 0}));
}

TEST(OpClamp, RejectsMissingBoundsOverflowBoolAndOutDtype) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1}, {1});
  EXPECT_EQ(h.prepare_only("aten::clamp", {x, h.none(), h.none(), h.empty<float>({1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::clamp", {x, h.str("0"), h.none(), h.empty<float>({1})}),
            Error::InvalidProgram);
  EValue* x8 = h.tensor<int8_t>({1}, {1});
  EXPECT_EQ(h.prepare_only("aten::clamp", {x8, h.i(-1000), h.i(1000), h.empty<int8_t>({1})}),
            Error::InvalidProgram);
  EValue* u8 = h.tensor<uint8_t>({1}, {1});
  EXPECT_EQ(h.prepare_only("aten::clamp", {u8, h.i(-1), h.i(5), h.empty<uint8_t>({1})}),
            Error::InvalidProgram);
  EValue* b = h.bool_tensor({1}, {1});
  EXPECT_EQ(
      h.prepare_only("aten::clamp", {b, h.b(false), h.b(true), h.empty_of(ScalarType::Bool, {1})}),
      Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::clamp", {x, h.i(0), h.i(1), h.empty<double>({1})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// leaky_relu, elu, silu, softplus, mish

TEST(OpLeakyRelu, ScalesNegativesOnly) {
  KernelHarness h;
  EValue* out = h.empty<float>({5});
  ASSERT_EQ(
      h.call("aten::leaky_relu", {h.tensor<float>({5}, {-2, 0, 3, kNaNF, -kInfF}), h.d(0.1), out}),
      Error::Ok);
  expect_close(h.values<float>(out), {-0.2, 0, 3, kNaN, -kInf});
  EValue* out64 = h.empty<double>({2});
  ASSERT_EQ(h.call("aten::leaky_relu", {h.tensor<double>({2}, {-4, 4}), h.i(-2), out64}),
            Error::Ok);
  EXPECT_EQ(h.values<double>(out64), (std::vector<double>{8, 4}));
}

TEST(OpLeakyRelu, RejectsIntegerInputAndMissingSlope) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::leaky_relu",
                           {h.tensor<int32_t>({1}, {1}), h.d(0.1), h.empty<int32_t>({1})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::leaky_relu",
                           {h.tensor<float>({1}, {1}), h.none(), h.empty<float>({1})}),
            Error::InvalidProgram);
}

TEST(OpElu, MatchesReferenceWithAlphaScaleAndInputScale) {
  const auto xs = random_floats(300, -6, 6, 5);
  const double kSeluAlpha = 1.6732632423543772, kSeluScale = 1.0507009873554805;
  const double params[][3] = {{1, 1, 1}, {0.5, 2, 1.5}, {kSeluAlpha, kSeluScale, 1}};
  for (const auto& p : params) {
    KernelHarness h;
    EValue* out = h.empty<float>({300});
    ASSERT_EQ(
        h.call("aten::elu", {h.tensor<float>({300}, xs), h.d(p[0]), h.d(p[1]), h.d(p[2]), out}),
        Error::Ok);
    expect_close(h.values<float>(out), map_double(xs, [&p](double x) {
                   return x > 0 ? p[1] * x : p[1] * p[0] * (std::exp(x * p[2]) - 1);
                 }));
  }
}

TEST(OpElu, RejectsIntegerInput) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::elu", {h.tensor<int64_t>({1}, {1}), h.i(1), h.i(1), h.i(1),
                                         h.empty<int64_t>({1})}),
            Error::OperatorMissing);
}

TEST(OpSiluMish, MatchDoubleReference) {
  const auto xs = random_floats(700, -30, 30, 9);
  auto silu = [](double x) { return x / (1 + std::exp(-x)); };
  auto mish = [](double x) { return x * std::tanh(std::log(1 + std::exp(x))); };
  expect_close(run_unary<float, float>("aten::silu", {700}, xs), map_double(xs, silu));
  expect_close(run_unary<float, float>("aten::mish", {700}, xs), map_double(xs, mish));
  // limits: exp overflows without producing NaN
  expect_close(run_unary<float, float>("aten::silu", {2}, {-200, 200}), {0, 200});
  expect_close(run_unary<float, float>("aten::mish", {2}, {-200, 200}), {0, 200});
  expect_close(run_unary<double, double>("aten::silu", {1}, {1}), {silu(1)}, 1e-12);
}

TEST(OpSiluMish, RejectIntegerInput) {
  KernelHarness h;
  for (const char* p : {"aten::silu", "aten::mish"}) {
    EXPECT_EQ(h.prepare_only(p, {h.tensor<int32_t>({1}, {1}), h.empty<float>({1})}),
              Error::InvalidProgram);
    EXPECT_EQ(h.prepare_only(p, {h.tensor<int32_t>({1}, {1}), h.empty<int32_t>({1})}),
              Error::OperatorMissing);
  }
}

TEST(OpSoftplus, MatchesReferenceAboveAndBelowThreshold) {
  const auto xs = random_floats(500, -30, 30, 4);
  for (double beta : {1.0, 2.0, 0.5}) {
    SCOPED_TRACE(beta);
    KernelHarness h;
    EValue* out = h.empty<float>({500});
    ASSERT_EQ(h.call("aten::softplus", {h.tensor<float>({500}, xs), h.d(beta), h.i(20), out}),
              Error::Ok);
    expect_close(h.values<float>(out), map_double(xs, [beta](double x) {
                   return x * beta > 20 ? x : std::log(1 + std::exp(x * beta)) / beta;
                 }));
  }
  // The threshold switches to the identity: with threshold 0, x = 1 gives exactly 1.
  KernelHarness h;
  EValue* out = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::softplus", {h.tensor<float>({2}, {1, -1}), h.i(1), h.i(0), out}),
            Error::Ok);
  expect_close(h.values<float>(out), {1, std::log(1 + std::exp(-1.0))});
}

TEST(OpSoftplus, RejectsZeroBetaAndIntegerInput) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1}, {1});
  EXPECT_EQ(h.prepare_only("aten::softplus", {x, h.i(0), h.i(20), h.empty<float>({1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::softplus", {x, h.d(1e-50), h.i(20), h.empty<float>({1})}),
            Error::InvalidProgram);  // 0 as float32
  EXPECT_EQ(h.prepare_only("aten::softplus",
                           {h.tensor<int32_t>({1}, {1}), h.i(1), h.i(20), h.empty<int32_t>({1})}),
            Error::OperatorMissing);
}

}  // namespace
}  // namespace tern
