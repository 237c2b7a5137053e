// Tests of the portable arithmetic kernels: add, sub, mul, div (Tensor and
// Scalar overloads, broadcasting, type promotion, rounding modes).
//
// Expected values are computed by hand on tiny inputs or by naive reference
// loops in double precision (here and in elementwise_ref.h), never taken
// from the kernels.
#include <gtest/gtest.h>

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

// a (op) b with numpy broadcasting, in double.
std::vector<double> ref_binary(const std::vector<int64_t>& out, const std::vector<int64_t>& sa,
                               const std::vector<float>& a, const std::vector<int64_t>& sb,
                               const std::vector<float>& b,
                               const std::function<double(double, double)>& op) {
  std::vector<double> r(numel_of(out));
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i) {
    r[i] = op(a[broadcast_index(out, sa, i)], b[broadcast_index(out, sb, i)]);
  }
  return r;
}

// Runs add.Tensor on random float inputs of the given shapes and compares
// with the reference.
void check_add_broadcast(const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                         const std::vector<int64_t>& so) {
  KernelHarness h;
  auto a = random_floats(numel_of(sa), -5, 5, 1), b = random_floats(numel_of(sb), -5, 5, 2);
  EValue* out = h.empty<float>(so);
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<float>(sa, a), h.tensor<float>(sb, b), h.i(1), out}),
            Error::Ok);
  expect_close(h.values<float>(out),
               ref_binary(so, sa, a, sb, b, [](double x, double y) { return x + y; }));
}

// ---------------------------------------------------------------------------
// add

TEST(OpAdd, AddsSameShapeFloat) {
  KernelHarness h;
  EValue* out = h.empty<float>({2, 2});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({2, 2}, {1, 2, 3, 4}),
                                        h.tensor<float>({2, 2}, {10, 20, 30, 40}), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{11, 22, 33, 44}));
}

TEST(OpAdd, BroadcastsRowAgainstMatrix) {
  KernelHarness h;
  EValue* out = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                                        h.tensor<float>({3}, {10, 20, 30}), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(OpAdd, BroadcastsColumnAgainstRow) {
  KernelHarness h;
  EValue* out = h.empty<float>({3, 2});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({3, 1}, {1, 2, 3}),
                                        h.tensor<float>({1, 2}, {10, 20}), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{11, 21, 12, 22, 13, 23}));
}

TEST(OpAdd, BroadcastsZeroDimTensorOnEitherSide) {
  KernelHarness h;
  EValue* out1 = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({}, {100}),
                                        h.tensor<float>({3}, {1, 2, 3}), h.i(1), out1}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out1), (std::vector<float>{101, 102, 103}));
  EValue* out2 = h.empty<float>({});
  ASSERT_EQ(h.call("aten::add.Tensor",
                   {h.tensor<float>({}, {1.5f}), h.tensor<float>({}, {2}), h.i(1), out2}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out2), (std::vector<float>{3.5f}));
}

TEST(OpAdd, MatchesReferenceOnGeneralBroadcastShapes) {
  check_add_broadcast({2, 1, 3, 1}, {4, 1, 5}, {2, 4, 3, 5});
  check_add_broadcast({5, 1, 7}, {1, 6, 1}, {5, 6, 7});
  check_add_broadcast({3, 1, 1, 2}, {3, 4, 5, 2}, {3, 4, 5, 2});
  check_add_broadcast({1, 300}, {700, 1}, {700, 300});  // rows longer than a chunk
  check_add_broadcast({1030}, {1030}, {1030});
  check_add_broadcast({2, 3, 4, 5, 6, 7}, {1, 3, 1, 5, 1, 7}, {2, 3, 4, 5, 6, 7});
  check_add_broadcast({1, 1, 1}, {1}, {1, 1, 1});
}

TEST(OpAdd, HandlesEmptyTensors) {
  KernelHarness h;
  EValue* out = h.empty<float>({0, 3});
  EXPECT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({0, 3}, {}),
                                        h.tensor<float>({3}, {1, 2, 3}), h.i(1), out}),
            Error::Ok);
}

TEST(OpAdd, AppliesAlpha) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({3}, {1, 2, 3}),
                                        h.tensor<float>({3}, {1, 1, 2}), h.d(0.5), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{1.5f, 2.5f, 4}));
}

TEST(OpAdd, PromotesIntTensorAndFloatTensorToFloat) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<int32_t>({3}, {1, -2, 3}),
                                        h.tensor<float>({3}, {0.5f, 0.25f, 0}), h.i(2), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{2, -1.5f, 3}));
}

TEST(OpAdd, ConvertsMixedDtypesAcrossChunks) {
  // int64 [600] + bool [600] -> int64: the inputs are converted in chunks.
  KernelHarness h;
  std::vector<int64_t> a(600);
  std::vector<uint8_t> b(600);
  for (int i = 0; i < 600; ++i) a[i] = i * 1000, b[i] = i % 3 == 0;
  EValue* out = h.empty<int64_t>({600});
  ASSERT_EQ(h.call("aten::add.Tensor",
                   {h.tensor<int64_t>({600}, a), h.bool_tensor({600}, b), h.i(7), out}),
            Error::Ok);
  auto got = h.values<int64_t>(out);
  for (int i = 0; i < 600; ++i) EXPECT_EQ(got[i], i * 1000 + (i % 3 == 0 ? 7 : 0)) << i;
}

TEST(OpAdd, KeepsInt64Exact) {
  KernelHarness h;
  const int64_t big = (int64_t(1) << 53) + 1;  // not representable in double
  EValue* out = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::add.Tensor",
                   {h.tensor<int64_t>({2}, {big, -big}), h.i(1), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(out), (std::vector<int64_t>{big + 1, -big + 1}));
}

TEST(OpAdd, WrapsInt32OverflowLikeTorch) {
  KernelHarness h;
  EValue* out = h.empty<int32_t>({1});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<int32_t>({1}, {INT32_MAX}),
                                        h.tensor<int32_t>({1}, {1}), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(out)[0], INT32_MIN);
}

TEST(OpAdd, AcceptsLiteralScalarInTensorSlot) {
  // torch.export writes `x + 2` as aten::add.Tensor(x, 2).
  KernelHarness h;
  EValue* out = h.empty<int32_t>({3});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.tensor<int32_t>({3}, {1, 2, 3}), h.i(2), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(out), (std::vector<int32_t>{3, 4, 5}));
}

TEST(OpAdd, BoolAddIsLogicalOr) {
  KernelHarness h;
  EValue* out = h.empty_of(ScalarType::Bool, {4});
  ASSERT_EQ(h.call("aten::add.Tensor", {h.bool_tensor({4}, {0, 0, 1, 1}),
                                        h.bool_tensor({4}, {0, 1, 0, 1}), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 1, 1, 1}));
}

TEST(OpAdd, ScalarOverloadPromotesIntTensorWithFloatScalar) {
  KernelHarness h;
  EValue* out = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::add.Scalar", {h.tensor<int64_t>({2}, {1, 2}), h.d(2.5), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{3.5f, 4.5f}));
}

TEST(OpAdd, RejectsWrongOutShape) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                                                h.tensor<float>({3}, {1, 2, 3}), h.i(1),
                                                h.empty<float>({3, 2})}),
            Error::InvalidProgram);
}

TEST(OpAdd, RejectsShapesThatDoNotBroadcast) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                                                h.tensor<float>({2}, {1, 2}), h.i(1),
                                                h.empty<float>({2, 3})}),
            Error::InvalidProgram);
}

TEST(OpAdd, RejectsOutDtypeOtherThanPromoted) {
  KernelHarness h;
  // int32 [2] + float64 0-d tensor -> float64 (a 0-d tensor of a higher category wins).
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {h.tensor<int32_t>({2}, {1, 2}),
                                                h.tensor<double>({}, {0.5}), h.i(1),
                                                h.empty<float>({2})}),
            Error::InvalidProgram);
  // float32 [2] + float64 0-d tensor -> float32 (same category: the dimensioned tensor wins).
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {h.tensor<float>({2}, {1, 2}),
                                                h.tensor<double>({}, {0.5}), h.i(1),
                                                h.empty<double>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.call("aten::add.Tensor", {h.tensor<float>({2}, {1, 2}), h.tensor<double>({}, {0.5}),
                                        h.i(1), h.empty<float>({2})}),
            Error::Ok);
}

TEST(OpAdd, RejectsFloatAlphaForIntegerResult) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {h.tensor<int32_t>({1}, {1}),
                                                h.tensor<int32_t>({1}, {1}), h.d(0.5),
                                                h.empty<int32_t>({1})}),
            Error::InvalidProgram);
}

TEST(OpAdd, RejectsBoolAlphaForNonBoolResult) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {h.tensor<float>({1}, {1}), h.tensor<float>({1}, {1}),
                                                h.b(true), h.empty<float>({1})}),
            Error::InvalidProgram);
}

TEST(OpAdd, TakesFloat16AndChecksItsOut) {
  KernelHarness h;
  EValue* x = h.empty_of(ScalarType::Float16, {2});
  EXPECT_EQ(h.prepare_only("aten::add.Tensor",
                           {x, x, h.i(1), h.empty_of(ScalarType::Float16, {2})}),
            Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::add.Tensor", {x, x, h.i(1), h.empty<float>({2})}),
            Error::InvalidProgram);  // float16 + float16 is float16
}

// ---------------------------------------------------------------------------
// sub

TEST(OpSub, SubtractsWithAlphaAndBroadcast) {
  KernelHarness h;
  EValue* out = h.empty<float>({2, 2});
  ASSERT_EQ(h.call("aten::sub.Tensor", {h.tensor<float>({2, 2}, {10, 20, 30, 40}),
                                        h.tensor<float>({2, 1}, {1, 2}), h.i(3), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{7, 17, 24, 34}));
}

TEST(OpSub, ScalarOverloadSubtractsFromInt64) {
  KernelHarness h;
  EValue* out = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::sub.Scalar", {h.tensor<int64_t>({3}, {5, 0, -5}), h.i(2), h.i(1), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(out), (std::vector<int64_t>{3, -2, -7}));
}

TEST(OpSub, RejectsBoolOperands) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::sub.Tensor", {h.bool_tensor({2}, {1, 0}),
                                                h.tensor<int64_t>({2}, {1, 1}), h.i(1),
                                                h.empty<int64_t>({2})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// mul

TEST(OpMul, MultipliesAgainstBroadcastRow) {
  KernelHarness h;
  auto a = random_floats(4 * 5 * 6, -3, 3, 3), b = random_floats(6, -3, 3, 4);
  EValue* out = h.empty<float>({4, 5, 6});
  ASSERT_EQ(h.call("aten::mul.Tensor",
                   {h.tensor<float>({4, 5, 6}, a), h.tensor<float>({6}, b), out}),
            Error::Ok);
  expect_close(h.values<float>(out), ref_binary({4, 5, 6}, {4, 5, 6}, a, {6}, b,
                                                [](double x, double y) { return x * y; }));
}

TEST(OpMul, ScalarOverloadScalesInt32ByFloatToFloat) {
  KernelHarness h;
  EValue* out = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::mul.Scalar", {h.tensor<int32_t>({2}, {3, -4}), h.d(0.5), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{1.5f, -2}));
}

TEST(OpMul, BoolMulIsLogicalAnd) {
  KernelHarness h;
  EValue* out = h.empty_of(ScalarType::Bool, {4});
  ASSERT_EQ(h.call("aten::mul.Tensor",
                   {h.bool_tensor({4}, {0, 0, 1, 1}), h.bool_tensor({4}, {0, 1, 0, 1}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 0, 0, 1}));
}

TEST(OpMul, PromotesUint8AndInt8ToInt16) {
  KernelHarness h;
  EValue* out = h.empty<int16_t>({2});
  ASSERT_EQ(h.call("aten::mul.Tensor", {h.tensor<uint8_t>({2}, {200, 3}),
                                        h.tensor<int8_t>({2}, {-2, 100}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int16_t>(out), (std::vector<int16_t>{-400, 300}));
  EXPECT_EQ(h.prepare_only("aten::mul.Tensor", {h.tensor<uint8_t>({1}, {1}),
                                                h.tensor<int8_t>({1}, {1}), h.empty<int8_t>({1})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// div

TEST(OpDiv, TrueDivisionOfIntsGivesFloat32) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::div.Tensor", {h.tensor<int64_t>({3}, {1, -7, 0}), h.i(2), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{0.5f, -3.5f, 0}));
  EXPECT_EQ(h.prepare_only("aten::div.Tensor",
                           {h.tensor<int64_t>({1}, {1}), h.i(2), h.empty<int64_t>({1})}),
            Error::InvalidProgram);
}

TEST(OpDiv, FloatDivisionByZeroFollowsIeee) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::div.Tensor", {h.tensor<float>({3}, {1, -1, 0}),
                                        h.tensor<float>({1}, {0}), out}),
            Error::Ok);
  auto v = h.values<float>(out);
  EXPECT_EQ(v[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST(OpDiv, ScalarOverloadDividesDouble) {
  KernelHarness h;
  EValue* out = h.empty<double>({2});
  ASSERT_EQ(h.call("aten::div.Scalar", {h.tensor<double>({2}, {1, 3}), h.i(4), out}), Error::Ok);
  EXPECT_EQ(h.values<double>(out), (std::vector<double>{0.25, 0.75}));
}

TEST(OpDiv, ModeNoneIsTrueDivision) {
  KernelHarness h;
  EValue* out = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::div.Tensor_mode", {h.tensor<int32_t>({2}, {7, -7}),
                                             h.tensor<int32_t>({2}, {2, 2}), h.none(), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{3.5f, -3.5f}));
}

TEST(OpDiv, FloorAndTruncRoundIntegersLikePython) {
  KernelHarness h;
  EValue* a = h.tensor<int64_t>({4}, {-7, 7, 7, -7});
  EValue* b = h.tensor<int64_t>({4}, {2, 2, -2, -2});
  EValue* floor_out = h.empty<int64_t>({4});
  EValue* trunc_out = h.empty<int64_t>({4});
  ASSERT_EQ(h.call("aten::div.Tensor_mode", {a, b, h.str("floor"), floor_out}), Error::Ok);
  ASSERT_EQ(h.call("aten::div.Tensor_mode", {a, b, h.str("trunc"), trunc_out}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(floor_out), (std::vector<int64_t>{-4, 3, -4, 3}));
  EXPECT_EQ(h.values<int64_t>(trunc_out), (std::vector<int64_t>{-3, 3, -3, 3}));
}

TEST(OpDiv, FloorRoundsFloatsTowardMinusInfinity) {
  KernelHarness h;
  EValue* out = h.empty<float>({5});
  ASSERT_EQ(h.call("aten::div.Tensor_mode",
                   {h.tensor<float>({5}, {-7, 7, -0.5f, 1, 7.5f}),
                    h.tensor<float>({5}, {2, -2, 3, 0, 2.5f}), h.str("floor"), out}),
            Error::Ok);
  auto v = h.values<float>(out);
  EXPECT_EQ(v[0], -4);
  EXPECT_EQ(v[1], -4);
  EXPECT_EQ(v[2], -1);
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[4], 3);
}

TEST(OpDiv, TruncRoundsFloatsTowardZero) {
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::div.Tensor_mode", {h.tensor<float>({3}, {-7, 7, 1}),
                                             h.tensor<float>({}, {2}), h.str("trunc"), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{-3, 3, 0}));
}

TEST(OpDiv, IntegerDivisionByZeroFailsAtRun) {
  KernelHarness h;
  EValue* out = h.empty<int32_t>({2});
  EXPECT_EQ(h.call("aten::div.Tensor_mode", {h.tensor<int32_t>({2}, {1, 2}),
                                             h.tensor<int32_t>({2}, {1, 0}), h.str("floor"), out}),
            Error::ExecutionFailed);
}

TEST(OpDiv, IntegerMinDividedByMinusOneWraps) {
  KernelHarness h;
  EValue* out = h.empty<int64_t>({1});
  ASSERT_EQ(h.call("aten::div.Tensor_mode",
                   {h.tensor<int64_t>({1}, {INT64_MIN}), h.i(-1), h.str("trunc"), out}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(out)[0], INT64_MIN);
}

TEST(OpDiv, RejectsUnknownRoundingMode) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::div.Tensor_mode", {h.tensor<float>({1}, {1}),
                                                     h.tensor<float>({1}, {1}), h.str("round"),
                                                     h.empty<float>({1})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
