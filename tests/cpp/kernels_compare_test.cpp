// Comparison kernels other than eq (kernels_elementwise_test.cpp has eq):
// ne, lt, le, gt, ge, Scalar and Tensor overloads.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

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

}  // namespace
}  // namespace tern
