// Kernel tests of the gather/scatter family and the structure ops of batch
// h3 (gather, scatter*, scatter_reduce.two, masked_scatter, as_strided,
// index_put with a boolean mask): what a file can get wrong, refused at
// load, and a few results by hand. Parity with eager on every dtype is in
// tests/python/test_ops_scatter.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

std::vector<float> iota_f(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(OpGather, ReadsAlongDimAndFailsAtRunOnANegativeEntry) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_f(6));
  EValue* y = h.empty<float>({2, 2});
  EXPECT_EQ(h.call("aten::gather", {x, h.i(1), h.tensor<int64_t>({2, 2}, {2, 0, 1, 1}), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{2, 0, 4, 4}));
  EValue* bad = h.tensor<int64_t>({2, 2}, {-1, 0, 1, 1});
  EXPECT_EQ(h.call("aten::gather", {x, h.i(1), bad, h.b(false), h.empty<float>({2, 2})}), Error::ExecutionFailed);
}

TEST(OpGather, RejectsAnIndexOfAnotherRankOrLargerThanSelfAndAFloatIndex) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_f(6));
  EXPECT_EQ(h.prepare_only("aten::gather",
                           {x, h.i(1), h.tensor<int64_t>({2}, {0, 1}), h.b(false), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::gather",
                           {x, h.i(1), h.tensor<int64_t>({3, 1}, {0, 0, 0}), h.b(false), h.empty<float>({3, 1})}),
            Error::InvalidProgram);  // dim 0 is not the gathered dim: at most 2
  EXPECT_EQ(h.prepare_only("aten::gather",
                           {x, h.i(1), h.tensor<float>({2, 1}, {0, 0}), h.b(false), h.empty<float>({2, 1})}),
            Error::OperatorMissing);
}

TEST(OpScatterReduce, MeanWithoutSelfCountsOnlyTheScatteredValues) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({4}, {10, 10, 10, 10});
  EValue* index = h.tensor<int64_t>({3}, {1, 1, 3});
  EValue* src = h.tensor<int32_t>({3}, {3, -8, 5});
  EValue* y = h.empty<int32_t>({4});
  ASSERT_EQ(h.call("aten::scatter_reduce.two", {x, h.i(0), index, src, h.str("mean"), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{10, -3, 10, 5}));  // floor(-5 / 2) = -3
  ASSERT_EQ(h.call("aten::scatter_reduce.two", {x, h.i(0), index, src, h.str("mean"), h.b(true), y}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{10, 1, 10, 7}));  // 5 / 3, 15 / 2
}

TEST(OpScatterReduce, RejectsAnUnknownReduceABoolMeanAndAnotherSrcDtype) {
  KernelHarness h;
  EValue* index = h.tensor<int64_t>({1}, {0});
  EValue* x = h.tensor<float>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::scatter_reduce.two",
                           {x, h.i(0), index, h.tensor<float>({1}, {1}), h.str("max"), h.b(true), h.empty<float>({2})}),
            Error::InvalidProgram);
  EValue* b = h.bool_tensor({2}, {1, 0});
  EValue* b_out = h.empty_of(ScalarType::Bool, {2});
  EXPECT_EQ(h.prepare_only("aten::scatter_reduce.two",
                           {b, h.i(0), index, h.bool_tensor({1}, {1}), h.str("mean"), h.b(true), b_out}),
            Error::InvalidProgram);
  EValue* src64 = h.tensor<double>({1}, {1});
  EXPECT_EQ(h.prepare_only("aten::scatter_reduce.two",
                           {x, h.i(0), index, src64, h.str("sum"), h.b(true), h.empty<float>({2})}),
            Error::InvalidProgram);
}

TEST(OpMaskedScatter, RejectsANonBoolMaskAndFailsAtRunWithTooFewSourceElements) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {1, 2, 3});
  EValue* source = h.tensor<float>({3}, {7, 8, 9});
  EXPECT_EQ(h.prepare_only("aten::masked_scatter", {x, h.tensor<uint8_t>({3}, {1, 0, 1}), source, h.empty<float>({3})}),
            Error::InvalidProgram);
  EValue* y = h.empty<float>({3});
  EXPECT_EQ(h.call("aten::masked_scatter", {x, h.bool_tensor({3}, {1, 0, 1}), h.tensor<float>({2}, {7, 8}), y}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{7, 2, 8}));
  EXPECT_EQ(h.call("aten::masked_scatter", {x, h.bool_tensor({3}, {1, 1, 1}), h.tensor<float>({2}, {7, 8}), y}),
            Error::ExecutionFailed);
}

TEST(OpAsStrided, RefusesReadsOutsideSelfAndNegativeStridesAtLoad) {
  KernelHarness h;
  EValue* x = h.tensor<float>({6}, iota_f(6));
  EXPECT_EQ(h.prepare_only("aten::as_strided", {x, h.ints({2, 2}), h.ints({3, 1}), h.i(1), h.empty<float>({2, 2})}),
            Error::Ok);  // the last element read is 1 + 3 + 1 = 5: fine
  EXPECT_EQ(h.prepare_only("aten::as_strided", {x, h.ints({2, 2}), h.ints({3, 1}), h.i(2), h.empty<float>({2, 2})}),
            Error::InvalidProgram);  // 2 + 3 + 1 = 6: past the end
  EXPECT_EQ(h.prepare_only("aten::as_strided", {x, h.ints({2}), h.ints({-1}), h.i(3), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::as_strided", {x, h.ints({2}), h.ints({INT64_MAX}), h.none(), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::as_strided",
                           {x, h.ints({0, 4}), h.ints({100, 100}), h.i(50), h.empty<float>({0, 4})}),
            Error::Ok);  // reads nothing
}

TEST(OpIndexPut, OneBooleanMaskWritesItsTrueEntriesInOrder) {
  // x [3, 2]; x[mask] = v with mask [3] (rows) and v [2, 1]: one value per true row.
  KernelHarness h;
  EValue* x = h.tensor<float>({3, 2}, iota_f(6));
  EValue* mask = h.bool_tensor({3}, {1, 0, 1});
  EValue* y = h.empty<float>({3, 2});
  ASSERT_EQ(h.call("aten::index_put", {x, h.tensors({mask}, true), h.tensor<float>({2, 1}, {7, 9}), h.b(false), y}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{7, 7, 2, 3, 9, 9}));
  EXPECT_EQ(h.call("aten::index_put", {x, h.tensors({h.bool_tensor({3}, {1, 1, 1})}, true),
                                       h.tensor<float>({2, 1}, {7, 9}), h.b(false), y}),
            Error::ExecutionFailed);  // 3 true entries, 2 values
}

TEST(OpIndexPut, RefusesAMaskWithOtherIndexTensorsA0dMaskAndAMaskOfOtherSizes) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_f(6));
  EValue* v = h.tensor<float>({}, {1});
  EValue* mask_and_index = h.tensors({h.bool_tensor({2}, {1, 0}), h.tensor<int64_t>({1}, {0})}, true);
  EXPECT_EQ(h.prepare_only("aten::index_put", {x, mask_and_index, v, h.b(false), h.empty<float>({2, 3})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::index_put",
                           {x, h.tensors({h.bool_tensor({}, {1})}, true), v, h.b(false), h.empty<float>({2, 3})}),
            Error::OperatorMissing);
  EValue* mask3 = h.tensors({h.bool_tensor({3}, {1, 0, 1})}, true);  // dim 0 of x has 2
  EXPECT_EQ(h.prepare_only("aten::index_put", {x, mask3, v, h.b(false), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
