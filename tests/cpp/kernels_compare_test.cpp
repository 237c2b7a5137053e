// Comparison kernels other than eq (kernels_elementwise_test.cpp has eq):
// ne, lt, le, gt, ge, Scalar and Tensor overloads.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/portable/ops.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using portable::ge_scalar_prepare;
using portable::ge_tensor_prepare;
using portable::gt_scalar_prepare;
using portable::gt_tensor_prepare;
using portable::le_scalar_prepare;
using portable::le_tensor_prepare;
using portable::lt_scalar_prepare;
using portable::lt_tensor_prepare;
using portable::ne_scalar_prepare;
using portable::ne_tensor_prepare;
using test::KernelHarness;

std::vector<uint8_t> compare(PrepareFn prepare, std::vector<float> a, std::vector<float> b) {
  KernelHarness h;
  EValue* out = h.empty_of(ScalarType::Bool, {static_cast<int64_t>(a.size())});
  EXPECT_EQ(h.call(prepare, {h.tensor<float>({(int64_t)a.size()}, a), h.tensor<float>({(int64_t)b.size()}, b), out}),
            Error::Ok);
  return h.values<uint8_t>(out);
}

TEST(OpCompare, EachOperatorOnLessEqualAndGreaterPairs) {
  const std::vector<float> a = {1, 2, 3}, b = {2, 2, 2};
  EXPECT_EQ(compare(lt_tensor_prepare, a, b), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(compare(le_tensor_prepare, a, b), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(compare(gt_tensor_prepare, a, b), (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(compare(ge_tensor_prepare, a, b), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(compare(ne_tensor_prepare, a, b), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(OpCompare, NanComparesFalseExceptNotEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(compare(lt_tensor_prepare, {nan}, {1}), (std::vector<uint8_t>{0}));
  EXPECT_EQ(compare(ge_tensor_prepare, {nan}, {1}), (std::vector<uint8_t>{0}));
  EXPECT_EQ(compare(ne_tensor_prepare, {nan}, {nan}), (std::vector<uint8_t>{1}));
}

TEST(OpCompare, IntTensorAgainstFloatScalarComparesAsFloat) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({3}, {2, 3, 1});
  EValue* out = h.empty_of(ScalarType::Bool, {3});
  ASSERT_EQ(h.call(gt_scalar_prepare, {x, h.d(2.5), out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 1, 0}));  // 2 > 2.5 is false
  ASSERT_EQ(h.call(le_scalar_prepare, {x, h.i(2), out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(OpCompare, BroadcastsColumnAgainstRow) {
  KernelHarness h;
  EValue* col = h.tensor<float>({2, 1}, {0, 10});
  EValue* row = h.tensor<float>({3}, {-1, 5, 20});
  EValue* out = h.empty_of(ScalarType::Bool, {2, 3});
  ASSERT_EQ(h.call(lt_tensor_prepare, {col, row, out}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(out), (std::vector<uint8_t>{0, 1, 1, 0, 0, 1}));
}

TEST(OpCompare, RejectsNonBoolOutAndWrongShape) {
  KernelHarness h;
  EValue* a = h.tensor<float>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only(ne_tensor_prepare, {a, a, h.empty<float>({2})}), Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only(ge_scalar_prepare, {a, h.d(1), h.empty_of(ScalarType::Bool, {3})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
