// Tests of the view/copy family and the creation kernels: view, _unsafe_view,
// permute, expand, cat, slice, select, squeeze, unsqueeze, clone, _to_copy,
// full, full_like, arange. Expected values are hand-computed or come from a
// naive index-arithmetic reference written here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

std::vector<int64_t> iota64(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = from + i;
  return v;
}

template <typename T>
std::vector<T> iota_as(int64_t n) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(i);
  return v;
}

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Row-major multi-index of flat index i over sizes.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int k = static_cast<int>(sizes.size()) - 1; k >= 0; --k) {
    idx[k] = i % sizes[k];
    i /= sizes[k];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  int64_t i = 0;
  for (size_t k = 0; k < sizes.size(); ++k) i = i * sizes[k] + idx[k];
  return i;
}

// --- view / _unsafe_view ---

TEST(OpView, InfersMinusOneAndKeepsBytes) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({2, 3, 4}, iota64(24));
  EValue* y = h.empty<int64_t>({4, 6});
  ASSERT_EQ(h.call("aten::_unsafe_view", {x, h.ints({4, -1}), y}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), iota64(24));
}

TEST(OpView, CopiesAnyDtypeIncludingFloat16Bits) {
  KernelHarness h;
  EValue* x = h.empty_of(ScalarType::Float16, {6});
  for (int i = 0; i < 6; ++i) x->tensor.data_as<uint16_t>()[i] = static_cast<uint16_t>(0x3C00 + i);
  EValue* y = h.empty_of(ScalarType::Float16, {3, 2});
  ASSERT_EQ(h.call("aten::_unsafe_view", {x, h.ints({3, 2}), y}), Error::Ok);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y->tensor.data_as<uint16_t>()[i], 0x3C00 + i);
}

TEST(OpView, ViewsToZeroD) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 1}, {4.5f});
  EValue* y = h.empty<float>({});
  ASSERT_EQ(h.call("aten::_unsafe_view", {x, h.ints({}), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y)[0], 4.5f);
}

TEST(OpView, RejectsWrongElementCountTwoMinusOnesAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::_unsafe_view", {x, h.ints({4, 2}), h.empty<float>({4, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::_unsafe_view", {x, h.ints({-1, -1}), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::_unsafe_view", {x, h.ints({-1, 4}), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::_unsafe_view", {x, h.ints({3, 2}), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::_unsafe_view", {x, h.ints({6}), h.empty<int32_t>({6})}),
            Error::InvalidProgram);
}

// --- permute ---

// out[i] = in[j] with j[dims[k]] = i[k].
template <typename T>
std::vector<T> naive_permute(const std::vector<T>& in, const std::vector<int64_t>& sizes,
                             const std::vector<int>& dims) {
  std::vector<int64_t> out_sizes;
  for (int d : dims) out_sizes.push_back(sizes[d]);
  std::vector<T> out(in.size());
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    std::vector<int64_t> oi = unravel(i, out_sizes), ii(sizes.size());
    for (size_t k = 0; k < dims.size(); ++k) ii[dims[k]] = oi[k];
    out[i] = in[ravel(ii, sizes)];
  }
  return out;
}

TEST(OpPermute, MatchesNaiveForEveryPermutationOf4d) {
  const std::vector<int64_t> sizes = {2, 3, 4, 5};
  std::vector<int> dims = {0, 1, 2, 3};
  int count = 0;
  do {
    KernelHarness h;
    std::vector<int64_t> out_sizes, dim_arg;
    for (int d : dims) {
      out_sizes.push_back(sizes[d]);
      dim_arg.push_back(count % 2 ? d - 4 : d);  // every other case with negative dims
    }
    EValue* x = h.tensor<float>(sizes, iota_as<float>(120));
    EValue* y = h.empty<float>(out_sizes);
    ASSERT_EQ(h.call("aten::permute", {x, h.ints(dim_arg), y}), Error::Ok);
    EXPECT_EQ(h.values<float>(y), naive_permute(iota_as<float>(120), sizes, dims)) << count;
    ++count;
  } while (std::next_permutation(dims.begin(), dims.end()));
  EXPECT_EQ(count, 24);
}

template <typename T>
void check_nchw_to_nhwc(const std::vector<int64_t>& sizes) {
  KernelHarness h;
  const int64_t n = numel_of(sizes);
  std::vector<T> in(n);
  for (int64_t i = 0; i < n; ++i) in[i] = static_cast<T>(i * 7 + 3);
  EValue* x = h.tensor<T>(sizes, in);
  EValue* y = h.empty<T>({sizes[0], sizes[2], sizes[3], sizes[1]});
  ASSERT_EQ(h.call("aten::permute", {x, h.ints({0, 2, 3, 1}), y}), Error::Ok);
  EXPECT_EQ(h.values<T>(y), naive_permute(in, sizes, {0, 2, 3, 1}));
}

TEST(OpPermute, TransposesNchwToNhwcAcrossTileEdgesForEveryElementSize) {
  // The copy transposes [H*W, C] planes in 32 x 32 tiles: these sizes give full
  // tiles and remainders on both sides (H*W = 1517, 85, 81, 16; C = 19, 3, 70, 33).
  check_nchw_to_nhwc<int8_t>({2, 19, 37, 41});
  check_nchw_to_nhwc<int16_t>({1, 3, 17, 5});
  check_nchw_to_nhwc<uint8_t>({1, 70, 9, 9});
  check_nchw_to_nhwc<float>({2, 3, 37, 41});
  check_nchw_to_nhwc<int64_t>({1, 33, 4, 4});
}

TEST(OpPermute, TransposesMatrixAndHandlesSizeOneAndEmptyDims) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue* y = h.empty<int32_t>({3, 2});
  ASSERT_EQ(h.call("aten::permute", {x, h.ints({1, 0}), y}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));

  EValue* a = h.tensor<float>({1, 3, 1}, {1, 2, 3});
  EValue* b = h.empty<float>({1, 1, 3});
  ASSERT_EQ(h.call("aten::permute", {a, h.ints({2, 0, 1}), b}), Error::Ok);
  EXPECT_EQ(h.values<float>(b), (std::vector<float>{1, 2, 3}));

  EValue* e = h.empty<float>({2, 0, 3});
  EValue* f = h.empty<float>({3, 2, 0});
  EXPECT_EQ(h.call("aten::permute", {e, h.ints({2, 0, 1}), f}), Error::Ok);
}

TEST(OpPermute, RejectsRepeatedDimWrongCountAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::permute", {x, h.ints({0, -2}), h.empty<float>({2, 2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::permute", {x, h.ints({0}), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::permute", {x, h.ints({1, 0}), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::permute", {x, h.ints({1, 2}), h.empty<float>({3, 2})}),
            Error::InvalidProgram);
}

// --- expand ---

TEST(OpExpand, BroadcastsSizeOneDimsAndAddsLeadingDims) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3, 1}, {1, 2, 3});
  EValue* y = h.empty<float>({2, 3, 4});
  ASSERT_EQ(h.call("aten::expand", {x, h.ints({2, -1, 4}), h.b(false), y}), Error::Ok);
  std::vector<float> want;
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) want.push_back(static_cast<float>(i + 1));
  EXPECT_EQ(h.values<float>(y), want);
}

TEST(OpExpand, RepeatsRowsAndBoolValues) {
  KernelHarness h;
  EValue* x = h.bool_tensor({1, 3}, {1, 0, 1});
  EValue* y = h.empty_of(ScalarType::Bool, {2, 3});
  ASSERT_EQ(h.call("aten::expand", {x, h.ints({2, 3}), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{1, 0, 1, 1, 0, 1}));

  EValue* s = h.tensor<int64_t>({}, {9});
  EValue* t = h.empty<int64_t>({2, 2});
  ASSERT_EQ(h.call("aten::expand", {s, h.ints({2, 2}), h.b(false), t}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(t), (std::vector<int64_t>{9, 9, 9, 9}));
}

TEST(OpExpand, RejectsNonSingletonChangeAndMinusOneInNewDim) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {1, 2, 3});
  EXPECT_EQ(h.prepare_only("aten::expand", {x, h.ints({4}), h.b(false), h.empty<float>({4})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::expand", {x, h.ints({-1, 3}), h.b(false), h.empty<float>({1, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::expand", {x, h.ints({2, 3}), h.b(false), h.empty<float>({3, 2})}),
            Error::InvalidProgram);
}

// --- cat ---

TEST(OpCat, ConcatenatesAlongLastDimWithNegativeDimAndEmptyInput) {
  KernelHarness h;
  EValue* a = h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue* b = h.tensor<float>({2, 1}, {7, 8});
  EValue* c = h.empty<float>({2, 0});
  EValue* y = h.empty<float>({2, 4});
  ASSERT_EQ(h.call("aten::cat", {h.tensors({a, c, b}), h.i(-1), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{1, 2, 3, 7, 4, 5, 6, 8}));
}

TEST(OpCat, ConcatenatesAlongMiddleAndFirstDims) {
  KernelHarness h;
  EValue* a = h.tensor<int64_t>({2, 1, 2}, {1, 2, 3, 4});
  EValue* b = h.tensor<int64_t>({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  EValue* y = h.empty<int64_t>({2, 3, 2});
  ASSERT_EQ(h.call("aten::cat", {h.tensors({a, b}), h.i(1), y}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), (std::vector<int64_t>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}));

  EValue* z = h.empty<int64_t>({4, 1, 2});
  ASSERT_EQ(h.call("aten::cat", {h.tensors({a, a}), h.i(0), z}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(z), (std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4}));
}

TEST(OpCat, SkipsLegacyEmptyOneDTensors) {
  KernelHarness h;
  EValue* a = h.tensor<float>({2, 2}, {1, 2, 3, 4});
  EValue* e = h.empty<float>({0});
  EValue* y = h.empty<float>({2, 4});
  ASSERT_EQ(h.call("aten::cat", {h.tensors({e, a, a}), h.i(1), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(OpCat, PromotesMixedDtypesToOut) {
  KernelHarness h;
  EValue* a = h.tensor<int32_t>({2}, {1, -2});
  EValue* b = h.tensor<float>({1}, {0.5f});
  EValue* c = h.bool_tensor({1}, {1});
  EValue* y = h.empty<float>({4});
  ASSERT_EQ(h.call("aten::cat", {h.tensors({a, b, c}), h.i(0), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{1, -2, 0.5f, 1}));
}

TEST(OpCat, RejectsMismatchedSizesWrongOutDtypeAndEmptyList) {
  KernelHarness h;
  EValue* a = h.tensor<float>({2, 3}, iota_as<float>(6));
  EValue* b = h.tensor<float>({3, 1}, iota_as<float>(3));
  EXPECT_EQ(h.prepare_only("aten::cat", {h.tensors({a, b}), h.i(1), h.empty<float>({2, 4})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::cat", {h.tensors({a, a}), h.i(0), h.empty<int64_t>({4, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::cat", {h.tensors({a, a}), h.i(2), h.empty<float>({4, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::cat", {h.tensors({}), h.i(0), h.empty<float>({0})}),
            Error::InvalidProgram);
}

// --- slice ---

std::vector<int64_t> slice_1d(KernelHarness& h, EValue* start, EValue* end, int64_t step,
                              int64_t expect_len) {
  EValue* x = h.tensor<int64_t>({10}, iota64(10));
  EValue* y = h.empty<int64_t>({expect_len});
  EXPECT_EQ(h.call("aten::slice.Tensor", {x, h.i(0), start, end, h.i(step), y}), Error::Ok);
  return h.values<int64_t>(y);
}

TEST(OpSlice, ClampsBoundsLikePython) {
  KernelHarness h;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  // x = [0..9]
  EXPECT_EQ(slice_1d(h, h.i(2), h.none(), 3, 3), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(slice_1d(h, h.i(-3), h.i(kMax), 1, 3), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(slice_1d(h, h.i(-100), h.i(4), 2, 2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(slice_1d(h, h.none(), h.i(-1), 4, 3), (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(slice_1d(h, h.i(5), h.i(2), 1, 0), (std::vector<int64_t>{}));
  EXPECT_EQ(slice_1d(h, h.i(0), h.i(kMin), 1, 0), (std::vector<int64_t>{}));
  EXPECT_EQ(slice_1d(h, h.i(kMin), h.i(kMax), kMax, 1), (std::vector<int64_t>{0}));
  EXPECT_EQ(slice_1d(h, h.i(12), h.none(), 1, 0), (std::vector<int64_t>{}));
}

TEST(OpSlice, AHugeStepThatTakesOneRowDoesNotOverflowTheStride) {
  // stride 8 * step 2^62 overflowed int64 (undefined; UBSan in the fuzz_module
  // harness) although a one-row slice never takes the step.
  KernelHarness h;
  EValue* x = h.tensor<float>({10, 8}, iota_as<float>(80));
  EValue* y = h.empty<float>({1, 8});
  ASSERT_EQ(h.call("aten::slice.Tensor", {x, h.i(0), h.i(3), h.none(), h.i(int64_t(1) << 62), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{24, 25, 26, 27, 28, 29, 30, 31}));
  EValue* src = h.tensor<float>({1, 8}, std::vector<float>(8, -1.f));
  EValue* z = h.empty<float>({10, 8});
  ASSERT_EQ(h.call("aten::slice_scatter", {x, src, h.i(0), h.i(9), h.none(), h.i(int64_t(1) << 62), z}), Error::Ok);
  EXPECT_EQ(h.values<float>(z)[72], -1.f);
  EXPECT_EQ(h.values<float>(z)[71], 71.f);
}

TEST(OpSlice, SlicesInnerDimWithStep) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3, 5}, iota_as<float>(15));
  EValue* y = h.empty<float>({3, 2});
  ASSERT_EQ(h.call("aten::slice.Tensor", {x, h.i(-1), h.i(1), h.i(4), h.i(2), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{1, 3, 6, 8, 11, 13}));

  EValue* z = h.empty<float>({1, 5});
  ASSERT_EQ(h.call("aten::slice.Tensor", {x, h.i(0), h.i(1), h.i(2), h.i(1), z}), Error::Ok);
  EXPECT_EQ(h.values<float>(z), (std::vector<float>{5, 6, 7, 8, 9}));
}

TEST(OpSlice, RejectsNonPositiveStepWrongOutAndZeroD) {
  KernelHarness h;
  EValue* x = h.tensor<float>({4}, iota_as<float>(4));
  EXPECT_EQ(h.prepare_only("aten::slice.Tensor", {x, h.i(0), h.none(), h.none(), h.i(0), h.empty<float>({4})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::slice.Tensor", {x, h.i(0), h.i(1), h.none(), h.i(1), h.empty<float>({4})}),
            Error::InvalidProgram);
  EValue* s = h.tensor<float>({}, {1});
  EXPECT_EQ(h.prepare_only("aten::slice.Tensor", {s, h.i(0), h.none(), h.none(), h.i(1), h.empty<float>({})}),
            Error::InvalidProgram);
}

// --- select ---

TEST(OpSelect, SelectsWithNegativeIndexAndDim) {
  KernelHarness h;
  const std::vector<int64_t> sizes = {2, 3, 4};
  EValue* x = h.tensor<int32_t>(sizes, iota_as<int32_t>(24));
  EValue* y = h.empty<int32_t>({2, 4});
  ASSERT_EQ(h.call("aten::select.int", {x, h.i(-2), h.i(-1), y}), Error::Ok);
  std::vector<int32_t> want;
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c) want.push_back(static_cast<int32_t>(ravel({a, 2, c}, sizes)));
  EXPECT_EQ(h.values<int32_t>(y), want);

  EValue* z = h.empty<int32_t>({3, 4});
  ASSERT_EQ(h.call("aten::select.int", {x, h.i(0), h.i(1), z}), Error::Ok);
  const std::vector<int32_t> all = iota_as<int32_t>(24);
  EXPECT_EQ(h.values<int32_t>(z), std::vector<int32_t>(all.begin() + 12, all.end()));

  EValue* v = h.tensor<float>({3}, {4, 5, 6});
  EValue* w = h.empty<float>({});
  ASSERT_EQ(h.call("aten::select.int", {v, h.i(0), h.i(2), w}), Error::Ok);
  EXPECT_EQ(h.values<float>(w)[0], 6.f);
}

TEST(OpSelect, RejectsIndexOutOfRangeAtPrepare) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::select.int", {x, h.i(1), h.i(3), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::select.int", {x, h.i(1), h.i(-4), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::select.int", {x, h.i(2), h.i(0), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::select.int", {x, h.i(1), h.i(0), h.empty<float>({3})}),
            Error::InvalidProgram);
}

// --- squeeze / unsqueeze ---

TEST(OpSqueeze, RemovesListedSizeOneDimsOnly) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 3, 1, 2}, iota_as<float>(6));
  EValue* y = h.empty<float>({3, 2});
  ASSERT_EQ(h.call("aten::squeeze.dims", {x, h.ints({0, -2}), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), iota_as<float>(6));
  // dim 1 has size 3: listed but kept
  EValue* z = h.empty<float>({1, 3, 2});
  ASSERT_EQ(h.call("aten::squeeze.dims", {x, h.ints({1, 2}), z}), Error::Ok);
  EXPECT_EQ(h.values<float>(z), iota_as<float>(6));
  EValue* s = h.tensor<float>({}, {3});
  EValue* t = h.empty<float>({});
  ASSERT_EQ(h.call("aten::squeeze.dims", {s, h.ints({0}), t}), Error::Ok);
  EXPECT_EQ(h.values<float>(t)[0], 3.f);
}

TEST(OpSqueeze, RejectsRepeatedDimAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 2, 1}, iota_as<float>(2));
  EXPECT_EQ(h.prepare_only("aten::squeeze.dims", {x, h.ints({0, -3}), h.empty<float>({2, 1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::squeeze.dims", {x, h.ints({0}), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::squeeze.dims", {x, h.ints({3}), h.empty<float>({1, 2, 1})}),
            Error::InvalidProgram);
}

TEST(OpUnsqueeze, InsertsDimAtPositiveAndNegativePositions) {
  struct Case {
    int64_t dim;
    std::vector<int64_t> out;
  };
  for (const Case& c : {Case{0, {1, 2, 3}}, Case{2, {2, 3, 1}}, Case{-1, {2, 3, 1}},
                        Case{-3, {1, 2, 3}}, Case{1, {2, 1, 3}}}) {
    KernelHarness h;
    EValue* x = h.tensor<int64_t>({2, 3}, iota64(6));
    EValue* y = h.empty<int64_t>(c.out);
    ASSERT_EQ(h.call("aten::unsqueeze", {x, h.i(c.dim), y}), Error::Ok) << c.dim;
    EXPECT_EQ(h.values<int64_t>(y), iota64(6));
  }
}

TEST(OpUnsqueeze, RejectsDimOutOfRangeAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::unsqueeze", {x, h.i(3), h.empty<float>({2, 3, 1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::unsqueeze", {x, h.i(-4), h.empty<float>({1, 2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::unsqueeze", {x, h.i(0), h.empty<float>({2, 1, 3})}),
            Error::InvalidProgram);
}

// --- clone ---

TEST(OpClone, CopiesValuesAndRejectsDtypeMismatch) {
  KernelHarness h;
  EValue* x = h.tensor<double>({2, 2}, {1.5, -2, 3, 4});
  EValue* y = h.empty<double>({2, 2});
  ASSERT_EQ(h.call("aten::clone", {x, h.none(), y}), Error::Ok);
  EXPECT_EQ(h.values<double>(y), (std::vector<double>{1.5, -2, 3, 4}));
  EXPECT_EQ(h.prepare_only("aten::clone", {x, h.none(), h.empty<float>({2, 2})}),
            Error::InvalidProgram);
}

// --- _to_copy ---

std::vector<EValue*> to_copy_args(KernelHarness& h, EValue* self, EValue* dtype, EValue* out) {
  return {self, dtype, h.none(), h.none(), h.none(), h.b(false), h.none(), out};
}

EValue* dtype_arg(KernelHarness& h, ScalarType t) { return h.i(static_cast<int64_t>(t)); }

TEST(OpToCopy, TruncatesFloatTowardZero) {
  KernelHarness h;
  EValue* x = h.tensor<float>({5}, {-2.7f, -0.5f, 0.5f, 2.9f, 100.f});
  EValue* y = h.empty<int32_t>({5});
  ASSERT_EQ(h.call("aten::_to_copy", to_copy_args(h, x, dtype_arg(h, ScalarType::Int32), y)),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{-2, 0, 0, 2, 100}));
}

TEST(OpToCopy, ToBoolIsNonzeroAndBoolToFloatIsZeroOrOne) {
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EValue* x = h.tensor<float>({4}, {0.f, -0.f, 0.1f, nan});
  EValue* y = h.empty_of(ScalarType::Bool, {4});
  ASSERT_EQ(h.call("aten::_to_copy", to_copy_args(h, x, dtype_arg(h, ScalarType::Bool), y)),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{0, 0, 1, 1}));

  EValue* b = h.bool_tensor({3}, {1, 0, 1});
  EValue* f = h.empty<double>({3});
  ASSERT_EQ(h.call("aten::_to_copy", to_copy_args(h, b, dtype_arg(h, ScalarType::Float64), f)),
            Error::Ok);
  EXPECT_EQ(h.values<double>(f), (std::vector<double>{1, 0, 1}));
}

TEST(OpToCopy, NegativeFloatToUint8WrapsLikeTorch) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {-1.f, 255.5f, 3.f});
  EValue* y = h.empty<uint8_t>({3});
  ASSERT_EQ(h.call("aten::_to_copy", to_copy_args(h, x, dtype_arg(h, ScalarType::UInt8), y)),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{255, 255, 3}));
}

template <typename T>
EValue* small_values(KernelHarness& h, ScalarType t) {
  EValue* v = h.empty_of(t, {4});
  for (int i = 0; i < 4; ++i) v->tensor.data_as<T>()[i] = static_cast<T>(i);
  return v;
}

EValue* small_values_of(KernelHarness& h, ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return small_values<float>(h, t);
    case ScalarType::Float64: return small_values<double>(h, t);
    case ScalarType::Int8: return small_values<int8_t>(h, t);
    case ScalarType::UInt8: return small_values<uint8_t>(h, t);
    case ScalarType::Int32: return small_values<int32_t>(h, t);
    case ScalarType::Int64: return small_values<int64_t>(h, t);
    default: return h.bool_tensor({4}, {0, 1, 1, 1});
  }
}

double element_as_double(const Tensor& t, int i) {
  switch (t.dtype) {
    case ScalarType::Float32: return t.data_as<float>()[i];
    case ScalarType::Float64: return t.data_as<double>()[i];
    case ScalarType::Int8: return t.data_as<int8_t>()[i];
    case ScalarType::UInt8: return t.data_as<uint8_t>()[i];
    case ScalarType::Int32: return t.data_as<int32_t>()[i];
    case ScalarType::Int64: return static_cast<double>(t.data_as<int64_t>()[i]);
    default: return t.data_as<uint8_t>()[i];
  }
}

TEST(OpToCopy, ConvertsBetweenEverySupportedDtypePair) {
  const ScalarType kTypes[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Int8,
                               ScalarType::UInt8,   ScalarType::Int32,   ScalarType::Int64,
                               ScalarType::Bool};
  for (ScalarType from : kTypes) {
    for (ScalarType to : kTypes) {
      KernelHarness h;
      EValue* x = small_values_of(h, from);  // 0, 1, 2, 3 (bool: 0, 1, 1, 1)
      EValue* y = h.empty_of(to, {4});
      ASSERT_EQ(h.call("aten::_to_copy", to_copy_args(h, x, dtype_arg(h, to), y)), Error::Ok);
      for (int i = 0; i < 4; ++i) {
        const double want = to == ScalarType::Bool || from == ScalarType::Bool ? (i != 0) : i;
        EXPECT_EQ(element_as_double(y->tensor, i), want)
            << scalar_type_name(from) << " -> " << scalar_type_name(to) << " at " << i;
      }
    }
  }
}

TEST(OpToCopy, CopiesWithoutDtypeAndRejectsBadDtypes) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({2}, {5, -6});
  EValue* y = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::_to_copy", to_copy_args(h, x, h.none(), y)), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), (std::vector<int64_t>{5, -6}));
  // out dtype disagrees with dtype
  EXPECT_EQ(h.prepare_only("aten::_to_copy",
                           to_copy_args(h, x, dtype_arg(h, ScalarType::Float32), h.empty<double>({2}))),
            Error::InvalidProgram);
  // not a ScalarType number
  EXPECT_EQ(h.prepare_only("aten::_to_copy", to_copy_args(h, x, h.i(42), h.empty<float>({2}))),
            Error::InvalidProgram);
  // float16 converts (values: tests/cpp/half_test.cpp)
  EXPECT_EQ(h.prepare_only("aten::_to_copy", to_copy_args(h, x, dtype_arg(h, ScalarType::Float16),
                                                         h.empty_of(ScalarType::Float16, {2}))),
            Error::Ok);
}

// --- full / full_like ---

std::vector<EValue*> full_args(KernelHarness& h, std::vector<int64_t> size, EValue* value,
                               EValue* dtype, EValue* out) {
  return {h.ints(size), value, dtype, h.none(), h.none(), h.none(), out};
}

TEST(OpFull, FillsWithInferredDtype) {
  KernelHarness h;
  EValue* f = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::full", full_args(h, {2, 3}, h.d(1.5), h.none(), f)), Error::Ok);
  EXPECT_EQ(h.values<float>(f), std::vector<float>(6, 1.5f));
  EValue* i = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::full", full_args(h, {3}, h.i(-7), h.none(), i)), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(i), std::vector<int64_t>(3, -7));
  EValue* b = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::full", full_args(h, {2}, h.b(true), h.none(), b)), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(b), std::vector<uint8_t>(2, 1));
}

TEST(OpFull, ConvertsValueToExplicitDtypeLikeTorch) {
  KernelHarness h;
  EValue* u = h.empty<uint8_t>({2});
  ASSERT_EQ(h.call("aten::full", full_args(h, {2}, h.i(-1), dtype_arg(h, ScalarType::UInt8), u)),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(u), std::vector<uint8_t>(2, 255));
  EValue* t = h.empty<int32_t>({2});
  ASSERT_EQ(h.call("aten::full", full_args(h, {2}, h.d(-2.7), dtype_arg(h, ScalarType::Int32), t)),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(t), std::vector<int32_t>(2, -2));
  EValue* b = h.empty_of(ScalarType::Bool, {1});
  ASSERT_EQ(h.call("aten::full", full_args(h, {1}, h.d(0.5), dtype_arg(h, ScalarType::Bool), b)),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(b)[0], 1);
  EValue* d = h.empty<double>({});
  ASSERT_EQ(h.call("aten::full", full_args(h, {}, h.i(3), dtype_arg(h, ScalarType::Float64), d)),
            Error::Ok);
  EXPECT_EQ(h.values<double>(d)[0], 3.0);
}

TEST(OpFull, RejectsOverflowWrongOutAndUnsupportedDtype) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::full", full_args(h, {2}, h.i(300), dtype_arg(h, ScalarType::UInt8),
                                                   h.empty<uint8_t>({2}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::full", full_args(h, {2}, h.d(NAN), dtype_arg(h, ScalarType::Int64),
                                                   h.empty<int64_t>({2}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::full", full_args(h, {2}, h.d(1e40), h.none(), h.empty<float>({2}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::full", full_args(h, {2}, h.d(1), h.none(), h.empty<float>({3}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::full", full_args(h, {2}, h.i(1), h.none(), h.empty<float>({2}))),
            Error::InvalidProgram);  // an Int fill infers int64
  EXPECT_EQ(h.prepare_only("aten::full",
                           full_args(h, {2}, h.d(1), dtype_arg(h, ScalarType::Float16),
                                     h.empty_of(ScalarType::Float16, {2}))),
            Error::Ok);
  // 1e5 overflows float16 (max 65504): refused, as torch does
  EXPECT_EQ(h.prepare_only("aten::full",
                           full_args(h, {2}, h.d(1e5), dtype_arg(h, ScalarType::Float16),
                                     h.empty_of(ScalarType::Float16, {2}))),
            Error::InvalidProgram);
}

TEST(OpFullLike, TakesSelfShapeAndDtypeUnlessDtypeGiven) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 2}, {1, 2, 3, 4});
  EValue* y = h.empty<int32_t>({2, 2});
  ASSERT_EQ(h.call("aten::full_like", {x, h.i(7), h.none(), h.none(), h.none(), h.none(), h.none(), y}),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), std::vector<int32_t>(4, 7));
  EValue* z = h.empty<double>({2, 2});
  ASSERT_EQ(h.call("aten::full_like", {x, h.d(0.25), dtype_arg(h, ScalarType::Float64), h.none(),
                                       h.none(), h.none(), h.none(), z}),
            Error::Ok);
  EXPECT_EQ(h.values<double>(z), std::vector<double>(4, 0.25));
  EXPECT_EQ(h.prepare_only("aten::full_like", {x, h.i(7), h.none(), h.none(), h.none(), h.none(),
                                               h.none(), h.empty<int32_t>({4})}),
            Error::InvalidProgram);
}

// --- arange ---

std::vector<EValue*> arange_args(KernelHarness& h, EValue* start, EValue* end, EValue* step,
                                 EValue* dtype, EValue* out) {
  return {start, end, step, dtype, h.none(), h.none(), h.none(), out};
}

TEST(OpArange, CountsIntegersAndNegativeSteps) {
  KernelHarness h;
  EValue* y = h.empty<int64_t>({5});
  ASSERT_EQ(h.call("aten::arange.start_step", arange_args(h, h.i(0), h.i(5), h.i(1), h.none(), y)),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), iota64(5));
  EValue* z = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::arange.start_step", arange_args(h, h.i(5), h.i(0), h.i(-2), h.none(), z)),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(z), (std::vector<int64_t>{5, 3, 1}));
  EValue* e = h.empty<int64_t>({0});
  ASSERT_EQ(h.call("aten::arange.start_step", arange_args(h, h.i(3), h.i(3), h.i(1), h.none(), e)),
            Error::Ok);
}

TEST(OpArange, FloatStepsComputedAsStartPlusIndexTimesStep) {
  KernelHarness h;
  EValue* y = h.empty<float>({10});
  ASSERT_EQ(h.call("aten::arange.start_step", arange_args(h, h.i(0), h.i(1), h.d(0.1), h.none(), y)),
            Error::Ok);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(h.values<float>(y)[i], static_cast<float>(0.1 * i));
  // ceil((2.5 - 0.5) / 0.75) = 3
  EValue* z = h.empty<double>({3});
  ASSERT_EQ(h.call("aten::arange.start_step",
                   arange_args(h, h.d(0.5), h.d(2.5), h.d(0.75), dtype_arg(h, ScalarType::Float64), z)),
            Error::Ok);
  EXPECT_EQ(h.values<double>(z), (std::vector<double>{0.5, 1.25, 2.0}));
}

TEST(OpArange, IntegerDtypeTruncatesStartAndStepLikeTorch) {
  KernelHarness h;
  // int32: length ceil((5 - 0.5) / 1.5) = 3 from the doubles; values from start 0, step 1.
  EValue* y = h.empty<int32_t>({3});
  ASSERT_EQ(h.call("aten::arange.start_step",
                   arange_args(h, h.d(0.5), h.i(5), h.d(1.5), dtype_arg(h, ScalarType::Int32), y)),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{0, 1, 2}));
  // int64: length from the truncated values: ceil((5 - 0) / 1) = 5.
  EValue* z = h.empty<int64_t>({5});
  ASSERT_EQ(h.call("aten::arange.start_step",
                   arange_args(h, h.d(0.5), h.i(5), h.i(1), dtype_arg(h, ScalarType::Int64), z)),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(z), iota64(5));
}

TEST(OpArange, RejectsWrongLengthZeroStepAndInconsistentSign) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::arange.start_step",
                           arange_args(h, h.i(0), h.i(5), h.i(1), h.none(), h.empty<int64_t>({4}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::arange.start_step",
                           arange_args(h, h.i(0), h.i(5), h.i(0), h.none(), h.empty<int64_t>({0}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::arange.start_step",
                           arange_args(h, h.i(5), h.i(0), h.i(1), h.none(), h.empty<int64_t>({0}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::arange.start_step",
                           arange_args(h, h.i(0), h.d(5), h.i(1), h.none(), h.empty<int64_t>({5}))),
            Error::InvalidProgram);  // a Double bound infers float32
  EXPECT_EQ(h.prepare_only("aten::arange.start_step",
                           arange_args(h, h.i(0), h.i(2), h.i(1), dtype_arg(h, ScalarType::Int8),
                                       h.empty<int8_t>({2}))),
            Error::OperatorMissing);
}

}  // namespace
}  // namespace tern
