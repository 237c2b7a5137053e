// Tests of the portable elementwise and activation kernels: add, sub, mul,
// div, eq, logical_not, where, relu, gelu, sigmoid, tanh, hardtanh, hardswish,
// _softmax, _log_softmax.
//
// Expected values are computed by hand on tiny inputs or by naive reference
// loops here in double precision (broadcast indices by division, softmax by
// the textbook formula), never taken from the kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

// ---------------------------------------------------------------------------
// Reference helpers

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// Flat index into an input of sizes `in` for flat index i of the broadcast
// out of sizes `out` (numpy rules, by division: the slow obvious way).
int64_t broadcast_index(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                        int64_t i) {
  int64_t idx = 0, stride = 1;
  const size_t off = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = i % out[d];
    i /= out[d];
    if (d < off) continue;
    const int64_t s = in[d - off];
    if (s != 1) idx += coord * stride;
    stride *= s;
  }
  return idx;
}

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

// Each element within 1e-4 * (max |want| + |want[i]|) (tests/cpp/compare.h).
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want) {
  EXPECT_TRUE(test::all_close(got, want, 1e-4));
}

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

// ---------------------------------------------------------------------------
// eq

TEST(OpEq, ComparesBroadcastTensorsIntoBool) {
  KernelHarness h;
  EValue* out = h.empty_of(ScalarType::Bool, {2, 3});
  ASSERT_EQ(h.call("aten::eq.Tensor", {h.tensor<int64_t>({2, 3}, {1, 2, 3, 4, 2, 6}),
                                       h.tensor<int32_t>({3}, {1, 2, 6}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{1, 1, 0, 0, 1, 1}));
}

TEST(OpEq, ScalarComparesIntTensorWithFloatValue) {
  KernelHarness h;
  EValue* half = h.empty_of(ScalarType::Bool, {3});
  EValue* two = h.empty_of(ScalarType::Bool, {3});
  EValue* x = h.tensor<int32_t>({3}, {2, 3, 2});
  ASSERT_EQ(h.call("aten::eq.Scalar", {x, h.d(2.5), half}), Error::Ok);
  ASSERT_EQ(h.call("aten::eq.Scalar", {x, h.d(2.0), two}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(half), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(h.values<uint8_t>(two), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(OpEq, NanIsNotEqualToItself) {
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EValue* x = h.tensor<float>({2}, {nan, 1});
  EValue* out = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::eq.Tensor", {x, x, out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 1}));
}

TEST(OpEq, RejectsNonBoolOut) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::eq.Tensor", {h.tensor<float>({1}, {1}),
                                               h.tensor<float>({1}, {1}), h.empty<float>({1})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// logical_not

TEST(OpLogicalNot, NegatesFloatIntAndBoolIntoBool) {
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EValue* f = h.empty_of(ScalarType::Bool, {4});
  EValue* i = h.empty_of(ScalarType::Bool, {3});
  EValue* b = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::logical_not", {h.tensor<float>({4}, {0, -0.0f, 2, nan}), f}), Error::Ok);
  ASSERT_EQ(h.call("aten::logical_not", {h.tensor<int64_t>({3}, {0, 5, -1}), i}), Error::Ok);
  ASSERT_EQ(h.call("aten::logical_not", {h.bool_tensor({2}, {1, 0}), b}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(f), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(h.values<uint8_t>(i), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(h.values<uint8_t>(b), (std::vector<uint8_t>{0, 1}));
}

TEST(OpLogicalNot, RejectsNonBoolOut) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::logical_not", {h.tensor<float>({1}, {1}), h.empty<float>({1})}),
            Error::InvalidProgram);
}

// ---------------------------------------------------------------------------
// where

TEST(OpWhere, BroadcastsConditionSelfAndOther) {
  KernelHarness h;
  std::vector<uint8_t> c = {1, 0, 1};  // [3, 1]
  std::vector<float> a = {1, 2, 3, 4};  // [4]
  std::vector<float> b = {-1, -2};      // [2, 1, 1]
  EValue* out = h.empty<float>({2, 3, 4});
  ASSERT_EQ(h.call("aten::where.self", {h.bool_tensor({3, 1}, c), h.tensor<float>({4}, a),
                                        h.tensor<float>({2, 1, 1}, b), out}),
            Error::Ok);
  std::vector<double> want(24);
  for (int64_t i = 0; i < 24; ++i) {
    want[i] = c[broadcast_index({2, 3, 4}, {3, 1}, i)] ? a[broadcast_index({2, 3, 4}, {4}, i)]
                                                       : b[broadcast_index({2, 3, 4}, {2, 1, 1}, i)];
  }
  expect_close(h.values<float>(out), want);
}

TEST(OpWhere, PromotesIntAndFloatScalar) {
  // torch.where(c, int32 tensor, 0.5) -> float32
  KernelHarness h;
  EValue* out = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::where.self", {h.bool_tensor({3}, {1, 0, 1}),
                                        h.tensor<int32_t>({3}, {7, 8, 9}), h.d(0.5), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{7, 0.5f, 9}));
}

TEST(OpWhere, AcceptsUint8ConditionAndLongRows) {
  KernelHarness h;
  std::vector<uint8_t> c(1000);
  std::vector<int64_t> a(1000);
  for (int i = 0; i < 1000; ++i) c[i] = (i % 7) ? 2 : 0, a[i] = i;  // nonzero = true
  EValue* out = h.empty<int64_t>({1000});
  ASSERT_EQ(h.call("aten::where.self", {h.tensor<uint8_t>({1000}, c), h.tensor<int64_t>({1000}, a),
                                        h.tensor<int64_t>({}, {-1}), out}),
            Error::Ok);
  auto got = h.values<int64_t>(out);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(got[i], (i % 7) ? i : -1) << i;
}

TEST(OpWhere, RejectsFloatCondition) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::where.self", {h.tensor<float>({1}, {1}), h.tensor<float>({1}, {1}),
                                                h.tensor<float>({1}, {2}), h.empty<float>({1})}),
            Error::InvalidProgram);
}

TEST(OpWhere, RejectsOutThatIsNotTheBroadcastShape) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::where.self",
                           {h.bool_tensor({2, 1}, {1, 0}), h.tensor<float>({3}, {1, 2, 3}),
                            h.tensor<float>({1}, {2}), h.empty<float>({3})}),
            Error::InvalidProgram);
}

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
