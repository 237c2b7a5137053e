// Tests of the portable elementwise math and bitwise kernels (batch h1):
// what the Python tests against eager cannot reach (scalar_tensor, which the
// exporter folds; arguments torch.export never writes) and the checks of
// prepare (each refusal with the Error kind the exporter reports).
//
// Expected values are written out by hand on tiny inputs, never taken from
// the kernels. tests/python/test_ops_elementwise_math.py compares every op with eager.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();

EValue* dtype_arg(KernelHarness& h, ScalarType t) { return h.i(static_cast<int64_t>(t)); }

// --- unary ---

TEST(OpSign, GivesZeroForNanAndSignedZeros) {
  KernelHarness h;
  EValue* x = h.tensor<float>({5}, {kNaNF, -0.f, 0.f, -3.5f, kInfF});
  EValue* y = h.empty<float>({5});
  ASSERT_EQ(h.call("aten::sign", {x, y}), Error::Ok);
  const std::vector<float> got = h.values<float>(y);
  EXPECT_EQ(got, (std::vector<float>{0.f, 0.f, 0.f, -1.f, 1.f}));
  EXPECT_FALSE(std::signbit(got[1]));  // -0.0 gives +0.0, as torch
}

TEST(OpSign, KeepsIntegerAndBoolDtypes) {
  KernelHarness h;
  EValue* i = h.tensor<int8_t>({4}, {-128, -1, 0, 127});
  EValue* yi = h.empty<int8_t>({4});
  ASSERT_EQ(h.call("aten::sign", {i, yi}), Error::Ok);
  EXPECT_EQ(h.values<int8_t>(yi), (std::vector<int8_t>{-1, -1, 0, 1}));
  EValue* b = h.bool_tensor({3}, {1, 0, 1});
  EValue* yb = h.empty_of(ScalarType::Bool, {3});
  ASSERT_EQ(h.call("aten::sign", {b, yb}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(yb), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(h.prepare_only("aten::sign", {i, h.empty<float>({4})}), Error::InvalidProgram);
}

TEST(OpIsNanIsInf, IntegerInputsGiveFalseEverywhere) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({3}, {0, -1, 7});
  EValue* y = h.empty_of(ScalarType::Bool, {3});  // the harness fills outs with 0xA5
  ASSERT_EQ(h.call("aten::isnan", {x, y}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{0, 0, 0}));
  EValue* f = h.tensor<double>({4}, {1.0, -INFINITY, NAN, INFINITY});
  EValue* z = h.empty_of(ScalarType::Bool, {4});
  ASSERT_EQ(h.call("aten::isinf", {f, z}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(z), (std::vector<uint8_t>{0, 1, 0, 1}));
  EXPECT_EQ(h.prepare_only("aten::isinf", {f, h.empty<double>({4})}), Error::InvalidProgram);
}

TEST(OpUnaryFloat, PromotesIntegersToFloat32AndKeepsFloat16) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({3}, {1, 8, 0});
  EValue* y = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::log2", {x, y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{0.f, 3.f, -kInfF}));
  EXPECT_EQ(h.prepare_only("aten::log2", {x, h.empty<int64_t>({3})}), Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::acos", {h.empty_of(ScalarType::Float16, {2}),
                                          h.empty_of(ScalarType::Float16, {2})}),
            Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::acos", {h.empty_of(ScalarType::Float16, {2}), h.empty<float>({2})}),
            Error::InvalidProgram);
}

// --- binary ---

TEST(OpAtan2, BroadcastsAndPromotesIntegersToFloat32) {
  KernelHarness h;
  EValue* y = h.tensor<int32_t>({2, 1}, {1, -1});
  EValue* x = h.tensor<int32_t>({2}, {0, 1});
  EValue* out = h.empty<float>({2, 2});
  ASSERT_EQ(h.call("aten::atan2", {y, x, out}), Error::Ok);
  const double q = M_PI / 4, r = M_PI / 2;
  const std::vector<double> want = {r, q, -r, -q};
  const std::vector<float> got = h.values<float>(out);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "at " << i;
  EXPECT_EQ(h.prepare_only("aten::atan2", {y, x, h.empty<int32_t>({2, 2})}), Error::InvalidProgram);
}

TEST(OpFmod, HasTheSignOfTheDividend) {
  KernelHarness h;
  EValue* a = h.tensor<int32_t>({4}, {-7, 7, -7, 7});
  EValue* b = h.tensor<int32_t>({4}, {2, -2, -2, 2});
  EValue* out = h.empty<int32_t>({4});
  ASSERT_EQ(h.call("aten::fmod.Tensor", {a, b, out}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(out), (std::vector<int32_t>{-1, 1, -1, 1}));
  EValue* f = h.tensor<float>({3}, {-7.5f, 7.5f, 1.f});
  EValue* fo = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::fmod.Scalar", {f, h.d(2.0), fo}), Error::Ok);
  EXPECT_EQ(h.values<float>(fo), (std::vector<float>{-1.5f, 1.5f, 1.f}));
}

TEST(OpFmod, IntegerByZeroFailsAtRunAndBoolIsRefused) {
  KernelHarness h;
  EValue* a = h.tensor<int64_t>({2}, {5, 6});
  EXPECT_EQ(h.call("aten::fmod.Scalar", {a, h.i(0), h.empty<int64_t>({2})}), Error::ExecutionFailed);
  EValue* b = h.bool_tensor({2}, {1, 0});
  EXPECT_EQ(h.prepare_only("aten::fmod.Tensor", {b, b, h.empty_of(ScalarType::Bool, {2})}),
            Error::OperatorMissing);
}

TEST(OpBitwise, WrapsIntScalarsAndPromotesMixedTensors) {
  KernelHarness h;
  EValue* u = h.tensor<uint8_t>({2}, {5, 255});
  EValue* out = h.empty<uint8_t>({2});
  ASSERT_EQ(h.call("aten::bitwise_and.Scalar", {u, h.i(300), out}), Error::Ok);  // 300 is 44 as uint8
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{4, 44}));
  EValue* s = h.tensor<int8_t>({2}, {-1, 3});
  EValue* wide = h.empty<int16_t>({2});
  ASSERT_EQ(h.call("aten::bitwise_xor.Tensor", {s, u, wide}), Error::Ok);  // int8 ^ uint8 -> int16
  EXPECT_EQ(h.values<int16_t>(wide), (std::vector<int16_t>{-6, 252}));
  EValue* b = h.bool_tensor({2}, {1, 0});
  EValue* bo = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::bitwise_or.Scalar", {b, h.b(false), bo}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(bo), (std::vector<uint8_t>{1, 0}));
}

TEST(OpBitwise, RefusesFloatingOperands) {
  KernelHarness h;
  EValue* i = h.tensor<int32_t>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::bitwise_and.Scalar", {i, h.d(2.0), h.empty<float>({2})}),
            Error::InvalidProgram);
  EValue* f = h.tensor<float>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::bitwise_or.Tensor", {i, f, h.empty<float>({2})}),
            Error::InvalidProgram);
}

TEST(OpLogicalXor, TreatsNanAsTrue) {
  KernelHarness h;
  EValue* a = h.tensor<float>({4}, {kNaNF, 0.f, 2.f, 0.f});
  EValue* b = h.tensor<int64_t>({4}, {0, 0, 3, 1});
  EValue* out = h.empty_of(ScalarType::Bool, {4});
  ASSERT_EQ(h.call("aten::logical_xor", {a, b, out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{1, 0, 0, 1}));
}

// --- clamp.Tensor ---

TEST(OpClampTensor, ClampsPerElementWithNanBoundsGivingNan) {
  KernelHarness h;
  EValue* x = h.tensor<float>({4}, {1.f, kNaNF, 3.f, -5.f});
  EValue* lo = h.tensor<float>({4}, {kNaNF, 0.f, 0.f, -1.f});
  EValue* hi = h.tensor<float>({1}, {2.f});
  EValue* out = h.empty<float>({4});
  ASSERT_EQ(h.call("aten::clamp.Tensor", {x, lo, hi, out}), Error::Ok);
  const std::vector<float> got = h.values<float>(out);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], 2.f);
  EXPECT_EQ(got[3], -1.f);
}

TEST(OpClampTensor, OneBoundAndBroadcastOut) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({3}, {-4, 0, 4});
  EValue* hi = h.tensor<int32_t>({2, 1}, {1, -2});
  EValue* out = h.empty<int32_t>({2, 3});
  ASSERT_EQ(h.call("aten::clamp.Tensor", {x, h.none(), hi, out}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(out), (std::vector<int32_t>{-4, 0, 1, -4, -2, -2}));
}

TEST(OpClampTensor, RefusesNoBoundsBoolWithBothBoundsAndBadShapes) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {1, 2, 3});
  EXPECT_EQ(h.prepare_only("aten::clamp.Tensor", {x, h.none(), h.none(), h.empty<float>({3})}),
            Error::InvalidProgram);
  EValue* b = h.bool_tensor({2}, {1, 0});
  EXPECT_EQ(h.prepare_only("aten::clamp.Tensor", {b, b, b, h.empty_of(ScalarType::Bool, {2})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::clamp.Tensor", {b, b, h.none(), h.empty_of(ScalarType::Bool, {2})}),
            Error::Ok);  // one bound: torch's maximum, which takes bool
  EValue* lo = h.tensor<float>({2}, {0, 0});
  EXPECT_EQ(h.prepare_only("aten::clamp.Tensor", {x, lo, h.none(), h.empty<float>({3})}),
            Error::InvalidProgram);
}

// --- div.Scalar_mode ---

TEST(OpDivScalarMode, FloorsAndTruncatesWithAScalarDivisor) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({2}, {7, -7});
  EValue* floor = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::div.Scalar_mode", {x, h.i(2), h.str("floor"), floor}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(floor), (std::vector<int64_t>{3, -4}));
  EValue* trunc = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::div.Scalar_mode", {x, h.i(2), h.str("trunc"), trunc}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(trunc), (std::vector<int64_t>{3, -3}));
  EValue* none = h.empty<float>({2});  // no rounding: true division, int -> float32
  ASSERT_EQ(h.call("aten::div.Scalar_mode", {x, h.i(2), h.none(), none}), Error::Ok);
  EXPECT_EQ(h.values<float>(none), (std::vector<float>{3.5f, -3.5f}));
}

TEST(OpDivScalarMode, RefusesBadArgumentsAndFailsOnZeroAtRun) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({2}, {7, -7});
  EXPECT_EQ(h.call("aten::div.Scalar_mode", {x, h.i(0), h.str("floor"), h.empty<int64_t>({2})}),
            Error::ExecutionFailed);
  EXPECT_EQ(h.prepare_only("aten::div.Scalar_mode", {x, h.i(2), h.str("round"), h.empty<int64_t>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::div.Scalar_mode", {x, x, h.str("floor"), h.empty<int64_t>({2})}),
            Error::InvalidProgram);  // other must be a Scalar
  EValue* b = h.bool_tensor({2}, {1, 0});
  EXPECT_EQ(h.prepare_only("aten::div.Scalar_mode", {b, h.b(true), h.str("trunc"), h.empty_of(ScalarType::Bool, {2})}),
            Error::OperatorMissing);
}

// --- fill.Scalar, scalar_tensor ---

TEST(OpFill, FillsSelfsShapeAndDtype) {
  KernelHarness h;
  EValue* x = h.tensor<uint8_t>({2, 2}, {1, 2, 3, 4});
  EValue* out = h.empty<uint8_t>({2, 2});
  ASSERT_EQ(h.call("aten::fill.Scalar", {x, h.i(-1), out}), Error::Ok);  // -1 wraps to 255, as torch
  EXPECT_EQ(h.values<uint8_t>(out), std::vector<uint8_t>(4, 255));
  EXPECT_EQ(h.prepare_only("aten::fill.Scalar", {x, h.i(300), h.empty<uint8_t>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::fill.Scalar", {x, h.i(1), h.empty<int32_t>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::fill.Scalar", {x, h.i(1), h.empty<uint8_t>({4})}),
            Error::InvalidProgram);
}

std::vector<EValue*> scalar_tensor_args(KernelHarness& h, EValue* s, EValue* dtype, EValue* out) {
  return {s, dtype, h.none(), h.none(), h.none(), out};
}

TEST(OpScalarTensor, DefaultsToFloat32WhateverTheScalar) {
  KernelHarness h;
  EValue* out = h.empty<float>({});
  ASSERT_EQ(h.call("aten::scalar_tensor", scalar_tensor_args(h, h.i(3), h.none(), out)), Error::Ok);
  EXPECT_EQ(h.values<float>(out)[0], 3.f);
  EValue* b = h.empty<float>({});
  ASSERT_EQ(h.call("aten::scalar_tensor", scalar_tensor_args(h, h.b(true), h.none(), b)), Error::Ok);
  EXPECT_EQ(h.values<float>(b)[0], 1.f);
  EXPECT_EQ(h.prepare_only("aten::scalar_tensor",
                           scalar_tensor_args(h, h.i(3), h.none(), h.empty<int64_t>({}))),
            Error::InvalidProgram);
}

TEST(OpScalarTensor, ConvertsToAnExplicitDtypeAndRefusesOverflowAndNon0d) {
  KernelHarness h;
  EValue* out = h.empty<int16_t>({});
  ASSERT_EQ(h.call("aten::scalar_tensor",
                   scalar_tensor_args(h, h.d(-2.7), dtype_arg(h, ScalarType::Int16), out)),
            Error::Ok);
  EXPECT_EQ(h.values<int16_t>(out)[0], -2);
  EXPECT_EQ(h.prepare_only("aten::scalar_tensor",
                           scalar_tensor_args(h, h.d(1e40), h.none(), h.empty<float>({}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::scalar_tensor",
                           scalar_tensor_args(h, h.d(1), h.none(), h.empty<float>({1}))),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
