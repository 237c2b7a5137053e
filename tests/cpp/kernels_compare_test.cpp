// Tests of the portable comparison, logical and selection kernels: eq, ne,
// lt, le, gt, ge (Scalar and Tensor overloads), logical_and, logical_or,
// logical_not, where. Expected values are computed by hand or by naive
// reference loops (elementwise_ref.h), never taken from the kernels.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tests/cpp/elementwise_ref.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;
using namespace test::elementwise;

std::vector<uint8_t> compare(const char* prepare, std::vector<float> a, std::vector<float> b) {
  KernelHarness h;
  EValue* out = h.empty_of(ScalarType::Bool, {static_cast<int64_t>(a.size())});
  EXPECT_EQ(h.call(prepare, {h.tensor<float>({(int64_t)a.size()}, a), h.tensor<float>({(int64_t)b.size()}, b), out}),
            Error::Ok);
  return h.values<uint8_t>(out);
}

TEST(OpCompare, EachOperatorOnLessEqualAndGreaterPairs) {
  const std::vector<float> a = {1, 2, 3}, b = {2, 2, 2};
  EXPECT_EQ(compare("aten::lt.Tensor", a, b), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(compare("aten::le.Tensor", a, b), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(compare("aten::gt.Tensor", a, b), (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(compare("aten::ge.Tensor", a, b), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(compare("aten::ne.Tensor", a, b), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(OpCompare, NanComparesFalseExceptNotEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(compare("aten::lt.Tensor", {nan}, {1}), (std::vector<uint8_t>{0}));
  EXPECT_EQ(compare("aten::ge.Tensor", {nan}, {1}), (std::vector<uint8_t>{0}));
  EXPECT_EQ(compare("aten::ne.Tensor", {nan}, {nan}), (std::vector<uint8_t>{1}));
}

TEST(OpCompare, IntTensorAgainstFloatScalarComparesAsFloat) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({3}, {2, 3, 1});
  EValue* out = h.empty_of(ScalarType::Bool, {3});
  ASSERT_EQ(h.call("aten::gt.Scalar", {x, h.d(2.5), out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 1, 0}));  // 2 > 2.5 is false
  ASSERT_EQ(h.call("aten::le.Scalar", {x, h.i(2), out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(OpCompare, BroadcastsColumnAgainstRow) {
  KernelHarness h;
  EValue* col = h.tensor<float>({2, 1}, {0, 10});
  EValue* row = h.tensor<float>({3}, {-1, 5, 20});
  EValue* out = h.empty_of(ScalarType::Bool, {2, 3});
  ASSERT_EQ(h.call("aten::lt.Tensor", {col, row, out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 1, 1, 0, 0, 1}));
}

TEST(OpCompare, RejectsNonBoolOutAndWrongShape) {
  KernelHarness h;
  EValue* a = h.tensor<float>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::ne.Tensor", {a, a, h.empty<float>({2})}), Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::ge.Scalar", {a, h.d(1), h.empty_of(ScalarType::Bool, {3})}),
            Error::InvalidProgram);
}

TEST(OpLogicalAnd, TruthOfEachSideBroadcastAndAnyDtype) {
  // torch.logical_and(tensor([[0., 2., nan]]).T, tensor([1., 0.])): nonzero (NaN too) is true
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EValue* out = h.empty_of(ScalarType::Bool, {3, 2});
  ASSERT_EQ(h.call("aten::logical_and", {h.tensor<float>({3, 1}, {0.f, 2.f, nan}), h.tensor<float>({2}, {1.f, 0.f}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 0, 1, 0, 1, 0}));
  EValue* out2 = h.empty_of(ScalarType::Bool, {3});
  ASSERT_EQ(h.call("aten::logical_or", {h.tensor<int64_t>({3}, {0, 0, 5}), h.bool_tensor({3}, {0, 1, 0}), out2}),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out2), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(h.prepare_only("aten::logical_and", {h.tensor<float>({2}, {1, 2}), h.tensor<float>({2}, {1, 2}),
                                                 h.empty<float>({2})}),
            Error::InvalidProgram);  // out must be bool
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

}  // namespace
}  // namespace tern
