// Tests of the reductions, scans and sorts: mean.dim, mean, sum.dim_IntList,
// prod, prod.dim_int, any.dim, any.dims, any, var, cumsum, sort, topk. Expected values
// come from a naive reference written here (double precision, one pass over
// the input mapping each element to its out index) or from hand computation.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

// Deterministic values in [-1, 1).
std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

// Out sizes for the reduced dims in `mask`.
std::vector<int64_t> reduced_sizes(const std::vector<int64_t>& sizes, uint32_t mask, bool keepdim) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!(mask >> d & 1)) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// sum (or mean) of `in` over the dims in `mask`, in double.
std::vector<double> naive_sum(const std::vector<double>& in, const std::vector<int64_t>& sizes,
                              uint32_t mask, bool mean) {
  std::vector<int64_t> out_sizes = reduced_sizes(sizes, mask, false);
  int64_t out_n = 1, count = 1;
  for (int64_t s : out_sizes) out_n *= s;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (mask >> d & 1) count *= sizes[d];
  }
  std::vector<double> out(out_n, 0.0);
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    int64_t rest = i, o = 0, o_stride = 1;
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % sizes[d];
      rest /= sizes[d];
      if (!(mask >> d & 1)) {
        o += idx * o_stride;
        o_stride *= sizes[d];
      }
    }
    out[o] += in[i];
  }
  if (mean) {
    for (double& x : out) x /= static_cast<double>(count);
  }
  return out;
}

std::vector<int64_t> dims_of(uint32_t mask, int rank, bool negative) {
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) {
    if (mask >> d & 1) dims.push_back(negative ? d - rank : d);
  }
  return dims;
}

// Each element within 1e-5 * (max |want| + |want[i]|) (tests/cpp/compare.h).
void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  EXPECT_TRUE(test::all_close(got, want, 1e-5, -1, what));
}

// Runs sum or mean of a float32 tensor over `mask` and checks it against the reference.
void check_float_reduction(const std::vector<int64_t>& sizes, uint32_t mask, bool keepdim,
                           bool mean, bool negative_dims) {
  KernelHarness h;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  const std::vector<float> data = random_floats(n, 17u + mask);
  EValue* x = h.tensor<float>(sizes, data);
  EValue* y = h.empty<float>(reduced_sizes(sizes, mask, keepdim));
  EValue* dims = h.ints(dims_of(mask, static_cast<int>(sizes.size()), negative_dims));
  ASSERT_EQ(h.call(mean ? "aten::mean.dim" : "aten::sum.dim_IntList", {x, dims, h.b(keepdim), h.none(), y}),
            Error::Ok);
  const std::vector<double> want =
      naive_sum(std::vector<double>(data.begin(), data.end()), sizes, mask, mean);
  expect_close(h.values<float>(y), want, mean ? "mean" : "sum");
}

// --- sum / mean over float32 ---

TEST(OpSum, MatchesNaiveForEverySubsetOfDimsOf4d) {
  for (uint32_t mask = 1; mask < 16; ++mask) {
    SCOPED_TRACE(mask);
    check_float_reduction({2, 3, 4, 5}, mask, mask % 2 == 0, false, mask % 3 == 0);
  }
}

TEST(OpMean, MatchesNaiveForEverySubsetOfDimsWithSizeOneDims) {
  for (uint32_t mask = 1; mask < 32; ++mask) {
    SCOPED_TRACE(mask);
    check_float_reduction({3, 1, 4, 1, 7}, mask, mask % 2 == 1, true, mask % 4 == 0);
  }
}

TEST(OpMean, GlobalAveragePoolsOverSpatialDimsOfNchw) {
  check_float_reduction({2, 3, 17, 19}, 0b1100, true, true, true);
  check_float_reduction({1, 64, 7, 7}, 0b1100, false, true, true);
}

TEST(OpSum, ReducesLeadingDimAcrossAccumulatorBlocks) {
  // [3, 2500] over dim 0: the last (kept) dim spans three 1024-column blocks.
  check_float_reduction({3, 2500}, 0b01, false, false, false);
  check_float_reduction({2, 5, 3, 1100}, 0b0101, false, false, true);
}

TEST(OpSum, StaysAccurateOverAMillionElements) {
  KernelHarness h;
  const int64_t n = 1 << 20;
  std::vector<float> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = 0.1f + static_cast<float>(i % 7) * 1e-3f;
  EValue* x = h.tensor<float>({n}, data);
  EValue* y = h.empty<float>({});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {x, h.ints({0}), h.b(false), h.none(), y}), Error::Ok);
  double want = 0;
  for (float v : data) want += v;
  EXPECT_NEAR(h.values<float>(y)[0], want, 1e-6 * want);
}

TEST(OpSum, NoneOrEmptyDimsReduceEverything) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  EValue* y = h.empty<float>({});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {x, h.ints({}), h.b(false), h.none(), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y)[0], 15.f);
  EValue* z = h.empty<float>({1, 1});
  ASSERT_EQ(h.call("aten::mean.dim", {x, h.none(), h.b(true), h.none(), z}), Error::Ok);
  EXPECT_EQ(h.values<float>(z)[0], 2.5f);
}

TEST(OpSum, ReducesZeroDAndEmptyTensors) {
  KernelHarness h;
  EValue* s = h.tensor<float>({}, {4.5f});
  EValue* t = h.empty<float>({});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {s, h.ints({0}), h.b(false), h.none(), t}), Error::Ok);
  EXPECT_EQ(h.values<float>(t)[0], 4.5f);
  // sum over an empty dim is 0, mean is NaN (as torch)
  EValue* e = h.empty<float>({2, 0});
  EValue* sum = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {e, h.ints({1}), h.b(false), h.none(), sum}), Error::Ok);
  EXPECT_EQ(h.values<float>(sum), (std::vector<float>{0, 0}));
  EValue* mean = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::mean.dim", {e, h.ints({1}), h.b(false), h.none(), mean}), Error::Ok);
  EXPECT_TRUE(std::isnan(h.values<float>(mean)[0]));
  EXPECT_TRUE(std::isnan(h.values<float>(mean)[1]));
  // keeping the empty dim: nothing to write
  EValue* none = h.empty<float>({0});
  EXPECT_EQ(h.call("aten::sum.dim_IntList", {e, h.ints({0}), h.b(false), h.none(), none}), Error::Ok);
}

// --- sum over other dtypes ---

TEST(OpSum, SumsIntegersAndBoolsToInt64) {
  KernelHarness h;
  EValue* a = h.tensor<int32_t>({2, 3}, {1, -2, 3, 2000000000, 2000000000, 1});
  EValue* ya = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {a, h.ints({-1}), h.b(false), h.none(), ya}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(ya), (std::vector<int64_t>{2, 4000000001LL}));

  EValue* b = h.bool_tensor({2, 3}, {1, 0, 1, 1, 1, 1});
  EValue* yb = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {b, h.ints({0}), h.b(false), h.none(), yb}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(yb), (std::vector<int64_t>{2, 1, 2}));

  EValue* c = h.tensor<int64_t>({4}, {-5, 7, 1LL << 40, 3});
  EValue* yc = h.empty<int64_t>({1});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {c, h.none(), h.b(true), h.none(), yc}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(yc)[0], 5 + (1LL << 40));

  EValue* u = h.tensor<uint8_t>({3}, {200, 100, 255});
  EValue* yu = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {u, h.ints({0}), h.b(false), h.none(), yu}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(yu)[0], 555);

  EValue* i8 = h.tensor<int8_t>({3}, {-100, -100, 5});
  EValue* y8 = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {i8, h.ints({0}), h.b(false), h.none(), y8}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y8)[0], -195);
}

TEST(OpSum, HonoursExplicitDtype) {
  KernelHarness h;
  EValue* a = h.tensor<int32_t>({3}, {1, 2, 3});
  EValue* ya = h.empty<int32_t>({});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {a, h.ints({0}), h.b(false), h.i(int(ScalarType::Int32)), ya}),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(ya)[0], 6);
  EValue* f = h.tensor<float>({2}, {0.5f, 0.25f});
  EValue* yf = h.empty<double>({});
  ASSERT_EQ(h.call("aten::mean.dim", {f, h.ints({0}), h.b(false), h.i(int(ScalarType::Float64)), yf}),
            Error::Ok);
  EXPECT_EQ(h.values<double>(yf)[0], 0.375);
  EValue* d = h.tensor<double>({2, 2}, {1e-20, 1.0, 2.0, -1.0});
  EValue* yd = h.empty<double>({2});
  ASSERT_EQ(h.call("aten::sum.dim_IntList", {d, h.ints({0}), h.b(false), h.none(), yd}), Error::Ok);
  EXPECT_EQ(h.values<double>(yd), (std::vector<double>{2.0, 0.0}));
}

TEST(OpSum, RejectsBadDimsWrongOutAndUnsupportedDtypes) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(h.prepare_only("aten::sum.dim_IntList", {x, h.ints({1, -1}), h.b(false), h.none(), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::sum.dim_IntList", {x, h.ints({2}), h.b(false), h.none(), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::sum.dim_IntList", {x, h.ints({1}), h.b(true), h.none(), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::sum.dim_IntList", {x, h.ints({1}), h.b(false), h.none(), h.empty<double>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::sum.dim_IntList", {x, h.ints({1}), h.b(false), h.i(int(ScalarType::Int64)),
                                             h.empty<int64_t>({2})}),
            Error::OperatorMissing);
  EValue* i = h.tensor<int64_t>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::mean.dim", {i, h.ints({0}), h.b(false), h.none(), h.empty<int64_t>({})}),
            Error::InvalidProgram);  // mean of an integer tensor needs a floating dtype
  EXPECT_EQ(h.prepare_only("aten::sum.dim_IntList", {i, h.ints({0}), h.b(false), h.none(), h.empty<int32_t>({})}),
            Error::InvalidProgram);  // int sums to int64
}

// --- any ---

TEST(OpAny, ReducesMiddleAndLastDims) {
  KernelHarness h;
  // [2, 3, 2]
  EValue* x = h.tensor<float>({2, 3, 2}, {0, 0, 0, 1, 0, 0, /**/ 0, 0, 0, 0, 2, 3});
  EValue* y = h.empty_of(ScalarType::Bool, {2, 2});
  ASSERT_EQ(h.call("aten::any.dim", {x, h.i(1), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{0, 1, 1, 1}));
  EValue* z = h.empty_of(ScalarType::Bool, {2, 3, 1});
  ASSERT_EQ(h.call("aten::any.dim", {x, h.i(-1), h.b(true), z}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(z), (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));
}

TEST(OpAny, TreatsNegativeZeroAsZeroAndNanAsNonzero) {
  KernelHarness h;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EValue* x = h.tensor<double>({3, 2}, {-0.0, 0.0, nan, 0.0, 0.0, -1e-300});
  EValue* y = h.empty_of(ScalarType::Bool, {3});
  ASSERT_EQ(h.call("aten::any.dim", {x, h.i(1), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(OpAny, KeepsUint8DtypeAndReducesBoolAndInt64) {
  KernelHarness h;
  EValue* u = h.tensor<uint8_t>({2, 2}, {0, 7, 0, 0});
  EValue* yu = h.empty<uint8_t>({2});
  ASSERT_EQ(h.call("aten::any.dim", {u, h.i(1), h.b(false), yu}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(yu), (std::vector<uint8_t>{1, 0}));
  EValue* b = h.bool_tensor({2, 2}, {0, 1, 0, 0});
  EValue* yb = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::any.dim", {b, h.i(0), h.b(false), yb}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(yb), (std::vector<uint8_t>{0, 1}));
  EValue* l = h.tensor<int64_t>({3}, {0, 1LL << 40, 0});
  EValue* yl = h.empty_of(ScalarType::Bool, {});
  ASSERT_EQ(h.call("aten::any.dim", {l, h.i(0), h.b(false), yl}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(yl)[0], 1);
  EValue* s = h.tensor<int32_t>({}, {0});
  EValue* ys = h.empty_of(ScalarType::Bool, {});
  ASSERT_EQ(h.call("aten::any.dim", {s, h.i(-1), h.b(false), ys}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(ys)[0], 0);
}

TEST(OpAny, RejectsWrongOutDtypeShapeAndDim) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 2}, {0, 1, 0, 0});
  EXPECT_EQ(h.prepare_only("aten::any.dim", {x, h.i(1), h.b(false), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::any.dim", {x, h.i(1), h.b(true), h.empty_of(ScalarType::Bool, {2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::any.dim", {x, h.i(2), h.b(false), h.empty_of(ScalarType::Bool, {2})}),
            Error::InvalidProgram);
}

// --- any over several dims, prod, var, cumsum ---

TEST(OpAny, DimsListReducesSeveralDimsAndEmptyListNone) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 2, 2}, {0, 0, 0, 5, /**/ 0, 0, 0, 0});
  EValue* y = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::any.dims", {x, h.ints({1, 2}), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y), (std::vector<uint8_t>{1, 0}));
  EValue* z = h.empty_of(ScalarType::Bool, {2, 2, 2});
  ASSERT_EQ(h.call("aten::any.dims", {x, h.ints({}), h.b(false), z}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(z), (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 0}));
  EValue* all = h.empty_of(ScalarType::Bool, {});
  ASSERT_EQ(h.call("aten::any", {x, all}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(all)[0], 1);
}

TEST(OpProd, MultipliesToInt64AndWrapsLikeTorch) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 3}, {-2, 3, 4, 1 << 20, 1 << 20, 1 << 30});
  EValue* y = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::prod.dim_int", {x, h.i(1), h.b(false), h.none(), y}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), (std::vector<int64_t>{-24, 0}));  // 2^70 wraps to 0
  EValue* b = h.bool_tensor({3}, {1, 2, 1});  // a byte other than 0 / 1 is still true
  EValue* yb = h.empty_of(ScalarType::Bool, {});
  ASSERT_EQ(h.call("aten::prod", {b, h.i(int(ScalarType::Bool)), yb}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(yb)[0], 1);
  EValue* e = h.tensor<float>({0, 2}, {});
  EValue* ye = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::prod.dim_int", {e, h.i(0), h.b(false), h.none(), ye}), Error::Ok);
  EXPECT_EQ(h.values<float>(ye), (std::vector<float>{1.f, 1.f}));
  EValue* f = h.tensor<float>({2}, {1.f, 2.f});
  EXPECT_EQ(h.prepare_only("aten::prod", {f, h.i(int(ScalarType::Int64)), h.empty<int64_t>({})}),
            Error::OperatorMissing);  // floating -> integer dtype: no loop
}

TEST(OpVar, TwoPassesKeepDigitsAndFollowTorchAtSmallCounts) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, {1e4f + 1, 1e4f + 2, 1e4f + 3, 5, 5, 5});
  EValue* y = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::var.correction", {x, h.ints({1}), h.none(), h.b(false), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{1.f, 0.f}));
  EValue* z = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::var.dim", {x, h.ints({0}), h.b(false), h.b(false), z}), Error::Ok);
  EXPECT_FLOAT_EQ(h.values<float>(z)[0], (1e4f + 1 - 5) * (1e4f + 1 - 5) / 4);
  EValue* w = h.empty<float>({2});  // correction 3 >= 3 elements: m2 / 0
  ASSERT_EQ(h.call("aten::var.correction", {x, h.ints({1}), h.i(3), h.b(false), w}), Error::Ok);
  EXPECT_TRUE(std::isinf(h.values<float>(w)[0]));
  EXPECT_TRUE(std::isnan(h.values<float>(w)[1]));
  EValue* n = h.tensor<int32_t>({2}, {1, 2});
  EXPECT_EQ(h.prepare_only("aten::var.correction", {n, h.none(), h.none(), h.b(false), h.empty<int32_t>({})}),
            Error::InvalidProgram);
}

TEST(OpCumsum, ScansEitherDimAndWrapsNarrowIntegers) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue* y0 = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::cumsum", {x, h.i(0), h.none(), y0}), Error::Ok);
  EXPECT_EQ(h.values<float>(y0), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EValue* y1 = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::cumsum", {x, h.i(-1), h.none(), y1}), Error::Ok);
  EXPECT_EQ(h.values<float>(y1), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EValue* c = h.tensor<int8_t>({3}, {100, 100, 100});
  EValue* yc = h.empty<int8_t>({3});
  ASSERT_EQ(h.call("aten::cumsum", {c, h.i(0), h.i(int(ScalarType::Int8)), yc}), Error::Ok);
  EXPECT_EQ(h.values<int8_t>(yc), (std::vector<int8_t>{100, -56, 44}));
  EValue* yl = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::cumsum", {c, h.i(0), h.none(), yl}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(yl), (std::vector<int64_t>{100, 200, 300}));
  EXPECT_EQ(h.prepare_only("aten::cumsum", {c, h.i(0), h.i(int(ScalarType::Bool)), h.empty_of(ScalarType::Bool, {3})}),
            Error::InvalidProgram);
}

// --- sort, topk ---

TEST(OpSort, OrdersNanLastAndKeepsTiesStable) {
  KernelHarness h;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EValue* x = h.tensor<float>({6}, {2, nan, -0.0f, 0.0f, -1, 2});
  EValue* v = h.empty<float>({6});
  EValue* i = h.empty<int64_t>({6});
  ASSERT_EQ(h.call("aten::sort.stable", {x, h.b(true), h.i(0), h.b(false), v, i}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(i), (std::vector<int64_t>{4, 2, 3, 0, 5, 1}));
  ASSERT_EQ(h.call("aten::sort.stable", {x, h.b(true), h.i(0), h.b(true), v, i}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(i), (std::vector<int64_t>{1, 0, 5, 2, 3, 4}));
  EValue* b = h.bool_tensor({2, 2}, {2, 0, 0, 1});  // [[true, false], [false, true]] along dim 0
  EValue* bv = h.empty_of(ScalarType::Bool, {2, 2});
  EValue* bi = h.empty<int64_t>({2, 2});
  ASSERT_EQ(h.call("aten::sort", {b, h.i(0), h.b(false), bv, bi}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(bv), (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(h.values<int64_t>(bi), (std::vector<int64_t>{1, 0, 0, 1}));
}

TEST(OpTopk, TakesTheLargestOrSmallestAlongADimAndChecksK) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 4}, {3, 9, 1, 7, /**/ 4, 0, 8, 6});
  EValue* v = h.empty<int32_t>({2, 2});
  EValue* i = h.empty<int64_t>({2, 2});
  ASSERT_EQ(h.call("aten::topk", {x, h.i(2), h.i(1), h.b(true), h.b(true), v, i}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(v), (std::vector<int32_t>{9, 7, 8, 6}));
  EXPECT_EQ(h.values<int64_t>(i), (std::vector<int64_t>{1, 3, 2, 3}));
  EValue* s = h.empty<int32_t>({1, 4});
  EValue* si = h.empty<int64_t>({1, 4});
  ASSERT_EQ(h.call("aten::topk", {x, h.i(1), h.i(0), h.b(false), h.b(true), s, si}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(s), (std::vector<int32_t>{3, 0, 1, 6}));
  EXPECT_EQ(h.prepare_only("aten::topk", {x, h.i(5), h.i(1), h.b(true), h.b(true), h.empty<int32_t>({2, 5}),
                                          h.empty<int64_t>({2, 5})}),
            Error::InvalidProgram);
  EValue* b = h.bool_tensor({2}, {0, 1});
  EXPECT_EQ(h.prepare_only("aten::topk", {b, h.i(1), h.i(0), h.b(true), h.b(true),
                                          h.empty_of(ScalarType::Bool, {1}), h.empty<int64_t>({1})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
