// Tests of the structure kernels: split_with_sizes, upsample_nearest2d.vec,
// upsample_bilinear2d.vec, native_group_norm, constant_pad_nd, amax, amin,
// argmax, argmin, max.dim, min.dim, index_select, index.Tensor. Expected
// values are hand-computed or come from naive references written here
// (double precision, one output element at a time, straight from the ATen
// formulas).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <typename T>
std::vector<T> iota_as(int64_t n, T from = T(0)) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(from + static_cast<T>(i));
  return v;
}

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

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << what << " at " << i;
  }
}

// --- split_with_sizes ---

TEST(OpSplitWithSizes, SplitsLastDimIntoUnevenAndEmptyItems) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 5}, iota_as<float>(10));
  EValue* a = h.empty<float>({2, 2});
  EValue* b = h.empty<float>({2, 0});
  EValue* c = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::split_with_sizes", {x, h.ints({2, 0, 3}), h.i(-1), h.tensors({a, b, c})}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(a), (std::vector<float>{0, 1, 5, 6}));
  EXPECT_EQ(h.values<float>(c), (std::vector<float>{2, 3, 4, 7, 8, 9}));
}

TEST(OpSplitWithSizes, SplitsMiddleAndFirstDims) {
  KernelHarness h;
  // [2, 3, 2] split along dim 1 into [1, 2].
  EValue* x = h.tensor<int64_t>({2, 3, 2}, iota_as<int64_t>(12));
  EValue* a = h.empty<int64_t>({2, 1, 2});
  EValue* b = h.empty<int64_t>({2, 2, 2});
  ASSERT_EQ(h.call("aten::split_with_sizes", {x, h.ints({1, 2}), h.i(1), h.tensors({a, b})}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(a), (std::vector<int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(h.values<int64_t>(b), (std::vector<int64_t>{2, 3, 4, 5, 8, 9, 10, 11}));
  // dim 0: each item is one contiguous block.
  EValue* y = h.tensor<uint8_t>({3, 2}, iota_as<uint8_t>(6));
  EValue* p = h.empty<uint8_t>({1, 2});
  EValue* q = h.empty<uint8_t>({2, 2});
  ASSERT_EQ(h.call("aten::split_with_sizes", {y, h.ints({1, 2}), h.i(0), h.tensors({p, q})}),
            Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(p), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(h.values<uint8_t>(q), (std::vector<uint8_t>{2, 3, 4, 5}));
}

TEST(OpSplitWithSizes, RejectsBadSizesItemCountItemShapeAndZeroD) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 5}, iota_as<float>(10));
  auto items = [&](int64_t s0, int64_t s1) {
    return h.tensors({h.empty<float>({2, s0}), h.empty<float>({2, s1})});
  };
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes", {x, h.ints({2, 2}), h.i(1), items(2, 2)}),
            Error::InvalidProgram);  // adds up to 4, not 5
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes", {x, h.ints({6, -1}), h.i(1), items(2, 3)}),
            Error::InvalidProgram);  // negative size
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes", {x, h.ints({2, 3}), h.i(1), items(3, 2)}),
            Error::InvalidProgram);  // items in the wrong order
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes",
                           {x, h.ints({2, 3}), h.i(1), h.tensors({h.empty<float>({2, 5})})}),
            Error::InvalidProgram);  // one item for two sizes
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes", {x, h.ints({2, 3}), h.i(2), items(2, 3)}),
            Error::InvalidProgram);  // dim out of range
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes",
                           {x, h.ints({2, 3}), h.i(1),
                            h.tensors({h.empty<float>({2, 2}), h.empty<int32_t>({2, 3})})}),
            Error::InvalidProgram);  // item dtype
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes",
                           {h.tensor<float>({}, {1}), h.ints({1}), h.i(0),
                            h.tensors({h.empty<float>({})})}),
            Error::InvalidProgram);  // 0-d self
  EXPECT_EQ(h.prepare_only("aten::split_with_sizes", {x, h.ints({2, 3}), h.i(1), h.empty<float>({2, 2})}),
            Error::InvalidProgram);  // out is not a list
}

// --- upsample_nearest2d.vec ---

TEST(OpUpsampleNearest2d, ScaleTwoRepeatsEachPixelTwice) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  EValue* y = h.empty<float>({1, 1, 4, 4});
  ASSERT_EQ(h.call("aten::upsample_nearest2d.vec", {x, h.none(), h.doubles({2.0, 2.0}), y}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(OpUpsampleNearest2d, FractionalScaleSamplesWithOneOverScaleNotSizeRatio) {
  // 5 -> floor(5 * 1.7) = 8 columns. Source column floor(j / 1.7):
  // 0 0 1 1 2 2 3 4 (the size ratio 5 / 8 would give 0 0 1 1 2 3 3 4).
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({1, 1, 1, 5}, {10, 11, 12, 13, 14});
  EValue* y = h.empty<int64_t>({1, 1, 1, 8});
  ASSERT_EQ(h.call("aten::upsample_nearest2d.vec", {x, h.none(), h.doubles({1.0, 1.7}), y}),
            Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), (std::vector<int64_t>{10, 10, 11, 11, 12, 12, 13, 14}));
  // The same sizes from output_size use 5 / 8.
  EValue* z = h.empty<int64_t>({1, 1, 1, 8});
  ASSERT_EQ(h.call("aten::upsample_nearest2d.vec", {x, h.ints({1, 8}), h.none(), z}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(z), (std::vector<int64_t>{10, 10, 11, 11, 12, 13, 13, 14}));
}

TEST(OpUpsampleNearest2d, DownsamplesEveryPlaneOfUint8) {
  // [2, 1, 4, 4] -> [2, 1, 2, 3]: rows floor(i * 2) = 0, 2; cols floor(j * 4/3) = 0, 1, 2.
  KernelHarness h;
  EValue* x = h.tensor<uint8_t>({2, 1, 4, 4}, iota_as<uint8_t>(32));
  EValue* y = h.empty<uint8_t>({2, 1, 2, 3});
  ASSERT_EQ(h.call("aten::upsample_nearest2d.vec", {x, h.ints({2, 3}), h.none(), y}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(y),
            (std::vector<uint8_t>{0, 1, 2, 8, 9, 10, 16, 17, 18, 24, 25, 26}));
}

TEST(OpUpsampleNearest2d, RejectsBothOrNeitherSizeBadScaleWrongOutAndRank) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto out = [&] { return h.empty<float>({1, 1, 4, 4}); };
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec", {x, h.none(), h.none(), out()}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec",
                           {x, h.ints({4, 4}), h.doubles({2.0, 2.0}), out()}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec", {x, h.none(), h.doubles({2.0}), out()}),
            Error::InvalidProgram);
  for (double bad : {0.0, -2.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e300}) {
    EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec",
                             {x, h.none(), h.doubles({2.0, bad}), out()}),
              Error::InvalidProgram)
        << bad;
  }
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec", {x, h.ints({0, 4}), h.none(), out()}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec", {x, h.ints({4, 5}), h.none(), out()}),
            Error::InvalidProgram);  // out is 4 x 4
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec",
                           {x, h.ints({4, 4}), h.none(), h.empty<double>({1, 1, 4, 4})}),
            Error::InvalidProgram);  // out dtype
  EXPECT_EQ(h.prepare_only("aten::upsample_nearest2d.vec",
                           {h.tensor<float>({1, 4}, {1, 2, 3, 4}), h.ints({4, 4}), h.none(), out()}),
            Error::InvalidProgram);  // 2-d input
}

// --- upsample_bilinear2d.vec ---

// ATen's formula in double: per dim, (i0, i1, l0, l1) of output index i.
struct Tap {
  int64_t i0, i1;
  double l0, l1;
};
Tap ref_tap(int64_t i, int64_t in, int64_t out, bool align, double scale) {
  if (in == out) return {i, i, 1, 0};
  const double step = align ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0)
                            : (scale > 0 ? 1.0 / scale : double(in) / double(out));
  double real = align ? step * double(i) : std::max(0.0, step * (double(i) + 0.5) - 0.5);
  const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(real), in - 1);
  const double l1 = std::min(std::max(real - double(i0), 0.0), 1.0);
  return {i0, std::min(i0 + 1, in - 1), 1 - l1, l1};
}

std::vector<double> ref_bilinear(const std::vector<float>& x, int64_t planes, int64_t h, int64_t w,
                                 int64_t oh, int64_t ow, bool align, double sh, double sw) {
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p) {
    const float* s = x.data() + p * h * w;
    for (int64_t i = 0; i < oh; ++i) {
      const Tap r = ref_tap(i, h, oh, align, sh);
      for (int64_t j = 0; j < ow; ++j) {
        const Tap c = ref_tap(j, w, ow, align, sw);
        out.push_back(r.l0 * (c.l0 * s[r.i0 * w + c.i0] + c.l1 * s[r.i0 * w + c.i1]) +
                      r.l1 * (c.l0 * s[r.i1 * w + c.i0] + c.l1 * s[r.i1 * w + c.i1]));
      }
    }
  }
  return out;
}

TEST(OpUpsampleBilinear2d, HandComputedTwoByTwoBothCornerModes) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  // Half-pixel centers: source x = max(0, (j + 0.5) / 2 - 0.5) = 0, 0.25, 0.75, 1.
  EValue* y = h.empty<float>({1, 1, 4, 4});
  ASSERT_EQ(h.call("aten::upsample_bilinear2d.vec", {x, h.none(), h.b(false), h.doubles({2, 2}), y}),
            Error::Ok);
  expect_close(h.values<float>(y),
               {0, 0.25, 0.75, 1, 0.5, 0.75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3}, 1e-6,
               "half-pixel");
  // align_corners: source x = j * (2 - 1) / (3 - 1).
  EValue* z = h.empty<float>({1, 1, 3, 3});
  ASSERT_EQ(h.call("aten::upsample_bilinear2d.vec", {x, h.ints({3, 3}), h.b(true), h.none(), z}),
            Error::Ok);
  expect_close(h.values<float>(z), {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}, 1e-6, "align_corners");
}

TEST(OpUpsampleBilinear2d, MatchesReferenceForSizesScalesAndCornerModes) {
  struct Case {
    int64_t h, w, oh, ow;
    double sh, sw;  // scale factors, 0 when output_size is given
    bool align;
  };
  const Case cases[] = {
      {5, 6, 8, 10, 1.7, 1.7, false},  // 1 / 1.7, not 5 / 8
      {5, 6, 8, 10, 1.7, 1.7, true},
      {5, 6, 7, 9, 0, 0, false},
      {5, 6, 7, 9, 0, 0, true},
      {6, 7, 3, 2, 0, 0, false},  // downsampling
      {4, 5, 4, 11, 0, 0, false},  // one dim unchanged: copied
      {3, 3, 1, 1, 0, 0, true},    // one output: step 0
  };
  for (const Case& c : cases) {
    KernelHarness h;
    const std::vector<float> data = random_floats(2 * 3 * c.h * c.w, 7);
    EValue* x = h.tensor<float>({2, 3, c.h, c.w}, data);
    EValue* y = h.empty<float>({2, 3, c.oh, c.ow});
    EValue* size = c.sh > 0 ? h.none() : h.ints({c.oh, c.ow});
    EValue* scales = c.sh > 0 ? h.doubles({c.sh, c.sw}) : h.none();
    ASSERT_EQ(h.call("aten::upsample_bilinear2d.vec", {x, size, h.b(c.align), scales, y}), Error::Ok);
    expect_close(h.values<float>(y), ref_bilinear(data, 6, c.h, c.w, c.oh, c.ow, c.align, c.sh, c.sw),
                 1e-5, "bilinear");
  }
}

TEST(OpUpsampleBilinear2d, RunsFloat64AndRejectsIntegerDtype) {
  KernelHarness h;
  EValue* x = h.tensor<double>({1, 1, 2, 2}, {0, 1, 2, 3});
  EValue* y = h.empty<double>({1, 1, 3, 3});
  ASSERT_EQ(h.call("aten::upsample_bilinear2d.vec", {x, h.ints({3, 3}), h.b(true), h.none(), y}),
            Error::Ok);
  EXPECT_EQ(h.values<double>(y), (std::vector<double>{0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}));
  EValue* xi = h.tensor<int32_t>({1, 1, 2, 2}, {0, 1, 2, 3});
  EXPECT_EQ(h.prepare_only("aten::upsample_bilinear2d.vec",
                           {xi, h.ints({3, 3}), h.b(true), h.none(), h.empty<int32_t>({1, 1, 3, 3})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::upsample_bilinear2d.vec",
                           {x, h.ints({3, 3}), h.i(1), h.none(), h.empty<double>({1, 1, 3, 3})}),
            Error::InvalidProgram);  // align_corners must be a Bool
}

// --- native_group_norm ---

// out, mean, rstd of group norm in double.
void ref_group_norm(const std::vector<float>& x, int64_t n, int64_t c, int64_t hxw, int64_t group,
                    const std::vector<float>& w, const std::vector<float>& b, double eps,
                    std::vector<double>* out, std::vector<double>* mean, std::vector<double>* rstd) {
  const int64_t cpg = c / group, d = cpg * hxw;
  out->assign(x.size(), 0.0);
  for (int64_t r = 0; r < n * group; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < d; ++i) m += x[r * d + i];
    m /= double(d);
    for (int64_t i = 0; i < d; ++i) v += (x[r * d + i] - m) * (x[r * d + i] - m);
    const double rs = 1.0 / std::sqrt(v / double(d) + eps);
    for (int64_t i = 0; i < d; ++i) {
      const int64_t ch = (r % group) * cpg + i / hxw;
      (*out)[r * d + i] = (x[r * d + i] - m) * rs * (w.empty() ? 1.0 : w[ch]) + (b.empty() ? 0.0 : b[ch]);
    }
    mean->push_back(m);
    rstd->push_back(rs);
  }
}

TEST(OpNativeGroupNorm, MatchesReferenceWithAndWithoutAffine) {
  for (bool affine : {true, false}) {
    KernelHarness h;
    const int64_t n = 2, c = 6, hh = 3, ww = 2, group = 3;
    const std::vector<float> data = random_floats(n * c * hh * ww, 3);
    const std::vector<float> w = affine ? random_floats(c, 5) : std::vector<float>();
    const std::vector<float> b = affine ? random_floats(c, 9) : std::vector<float>();
    EValue* x = h.tensor<float>({n, c, hh, ww}, data);
    EValue* y = h.empty<float>({n, c, hh, ww});
    EValue* mean = h.empty<float>({n, group});
    EValue* rstd = h.empty<float>({n, group});
    EValue* wv = affine ? h.tensor<float>({c}, w) : h.none();
    EValue* bv = affine ? h.tensor<float>({c}, b) : h.none();
    ASSERT_EQ(h.call("aten::native_group_norm", {x, wv, bv, h.i(n), h.i(c), h.i(hh * ww), h.i(group),
                                                 h.d(1e-5), y, mean, rstd}),
              Error::Ok);
    std::vector<double> want, want_mean, want_rstd;
    ref_group_norm(data, n, c, hh * ww, group, w, b, 1e-5, &want, &want_mean, &want_rstd);
    expect_close(h.values<float>(y), want, 1e-5, "out");
    expect_close(h.values<float>(mean), want_mean, 1e-6, "mean");
    expect_close(h.values<float>(rstd), want_rstd, 1e-4, "rstd");
  }
}

TEST(OpNativeGroupNorm, HandComputedOneGroupOfFourAndTwoDInput) {
  // x = [1, 2, 3, 4]: mean 2.5, var 1.25, eps 0: out = (x - 2.5) / sqrt(1.25).
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 4}, {1, 2, 3, 4});
  EValue* y = h.empty<float>({1, 4});
  EValue* mean = h.empty<float>({1, 1});
  EValue* rstd = h.empty<float>({1, 1});
  ASSERT_EQ(h.call("aten::native_group_norm", {x, h.none(), h.none(), h.i(1), h.i(4), h.i(1), h.i(1),
                                               h.d(0.0), y, mean, rstd}),
            Error::Ok);
  const double s = 1.0 / std::sqrt(1.25);
  expect_close(h.values<float>(y), {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-6, "out");
  expect_close(h.values<float>(mean), {2.5}, 1e-7, "mean");
  expect_close(h.values<float>(rstd), {s}, 1e-6, "rstd");
}

TEST(OpNativeGroupNorm, RejectsIndivisibleGroupsWrongNCHxWAndShapes) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 4, 3}, random_floats(24, 1));
  auto call = [&](int64_t n, int64_t c, int64_t hxw, int64_t group, EValue* w, int64_t stat_cols) {
    return h.prepare_only("aten::native_group_norm",
                          {x, w, h.none(), h.i(n), h.i(c), h.i(hxw), h.i(group), h.d(1e-5),
                           h.empty<float>({2, 4, 3}), h.empty<float>({2, stat_cols}),
                           h.empty<float>({2, stat_cols})});
  };
  EXPECT_EQ(call(2, 4, 3, 2, h.none(), 2), Error::Ok);
  EXPECT_EQ(call(2, 4, 3, 3, h.none(), 3), Error::InvalidProgram);  // 4 % 3
  EXPECT_EQ(call(2, 4, 3, 0, h.none(), 0), Error::InvalidProgram);  // group 0
  EXPECT_EQ(call(1, 4, 3, 2, h.none(), 2), Error::InvalidProgram);  // N
  EXPECT_EQ(call(2, 4, 4, 2, h.none(), 2), Error::InvalidProgram);  // HxW
  EXPECT_EQ(call(2, 4, 3, 2, h.none(), 4), Error::InvalidProgram);  // mean / rstd shape
  EXPECT_EQ(call(2, 4, 3, 2, h.tensor<float>({3}, {1, 1, 1}), 2), Error::InvalidProgram);  // weight
  EXPECT_EQ(call(2, 4, 3, 2, h.tensor<double>({4}, {1, 1, 1, 1}), 2), Error::OperatorMissing);
}

// --- constant_pad_nd ---

TEST(OpConstantPadNd, PadsLastDimOnBothSides) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 2}, {1, 2, 3, 4});
  EValue* y = h.empty<float>({2, 5});
  ASSERT_EQ(h.call("aten::constant_pad_nd", {x, h.ints({1, 2}), h.d(-0.5), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{-0.5, 1, 2, -0.5, -0.5, -0.5, 3, 4, -0.5, -0.5}));
}

TEST(OpConstantPadNd, NegativePadsCropAndMixWithPadding) {
  // [3, 3] = 0..8; pad = (l -1, r 1, t 1, b -1): crop column 0 and row 2,
  // add a column on the right and a row on top.
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({3, 3}, iota_as<int64_t>(9));
  EValue* y = h.empty<int64_t>({3, 3});
  ASSERT_EQ(h.call("aten::constant_pad_nd", {x, h.ints({-1, 1, 1, -1}), h.i(7), y}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y), (std::vector<int64_t>{7, 7, 7, 1, 2, 7, 4, 5, 7}));
}

TEST(OpConstantPadNd, PadsOnlyTheLastDimsOf3dAndConvertsValue) {
  // [2, 1, 2] with pad (0, 0, 1, 0) pads dim 1 only; a double value
  // truncates for int32 (2.7 -> 2).
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 1, 2}, {1, 2, 3, 4});
  EValue* y = h.empty<int32_t>({2, 2, 2});
  ASSERT_EQ(h.call("aten::constant_pad_nd", {x, h.ints({0, 0, 1, 0}), h.d(2.7), y}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{2, 2, 1, 2, 2, 2, 3, 4}));
}

TEST(OpConstantPadNd, CropsToEmptyAndFillsWhenNothingSurvives) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EValue* empty = h.empty<float>({2, 0});
  EXPECT_EQ(h.call("aten::constant_pad_nd", {x, h.ints({-1, -2}), h.d(0), empty}), Error::Ok);
  // Cropping all of dim 1 and padding 2 back: only the value is left.
  EValue* y = h.empty<float>({2, 2});
  ASSERT_EQ(h.call("aten::constant_pad_nd", {x, h.ints({-3, 2}), h.d(9), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{9, 9, 9, 9}));
}

TEST(OpConstantPadNd, RejectsOddOrTooLongPadNegativeSizeAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::constant_pad_nd", {x, h.ints({1}), h.d(0), h.empty<float>({2, 4})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::constant_pad_nd",
                           {x, h.ints({0, 0, 0, 0, 1, 1}), h.d(0), h.empty<float>({2, 3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::constant_pad_nd", {x, h.ints({-2, -2}), h.d(0), h.empty<float>({2, 0})}),
            Error::InvalidProgram);  // 3 - 4 < 0
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(h.prepare_only("aten::constant_pad_nd", {x, h.ints({big, big}), h.d(0), h.empty<float>({2, 3})}),
            Error::InvalidProgram);  // overflow
  EXPECT_EQ(h.prepare_only("aten::constant_pad_nd", {x, h.ints({1, 1}), h.d(0), h.empty<float>({2, 4})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::constant_pad_nd", {x, h.ints({1, 1}), h.none(), h.empty<float>({2, 5})}),
            Error::InvalidProgram);  // value must be a Scalar
}

// --- amax / amin ---

// max (or min) over the dims in mask, in double, NaN-propagating.
std::vector<double> ref_extreme(const std::vector<float>& in, const std::vector<int64_t>& sizes,
                                uint32_t mask, bool max) {
  int64_t out_n = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!(mask >> d & 1)) out_n *= sizes[d];
  }
  std::vector<double> out(out_n, max ? -INFINITY : INFINITY);
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i) {
    int64_t rest = i, o = 0, stride = 1;
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % sizes[d];
      rest /= sizes[d];
      if (!(mask >> d & 1)) {
        o += idx * stride;
        stride *= sizes[d];
      }
    }
    const double x = in[i];
    if (std::isnan(x) || std::isnan(out[o])) {
      out[o] = NAN;
    } else {
      out[o] = max ? std::max(out[o], x) : std::min(out[o], x);
    }
  }
  return out;
}

TEST(OpAmaxAmin, MatchReferenceForEveryDimSubsetOf4d) {
  const std::vector<int64_t> sizes = {2, 3, 1, 4};
  const std::vector<float> data = random_floats(24, 11);
  for (uint32_t mask = 1; mask < 16; ++mask) {
    for (bool max : {true, false}) {
      KernelHarness h;
      std::vector<int64_t> dims, out_sizes;
      for (int d = 0; d < 4; ++d) {
        if (mask >> d & 1) dims.push_back(d - 4);  // negative dims
        else out_sizes.push_back(sizes[d]);
      }
      EValue* x = h.tensor<float>(sizes, data);
      EValue* y = h.empty<float>(out_sizes);
      ASSERT_EQ(h.call(max ? "aten::amax" : "aten::amin", {x, h.ints(dims), h.b(false), y}), Error::Ok);
      expect_close(h.values<float>(y), ref_extreme(data, sizes, mask, max), 0, "amax/amin");
    }
  }
}

TEST(OpAmaxAmin, EmptyDimListReducesAllAndKeepdimKeepsOnes) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({2, 3}, {4, -7, 2, 9, 0, -1});
  EValue* all = h.empty<int32_t>({});
  ASSERT_EQ(h.call("aten::amin", {x, h.ints({}), h.b(false), all}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(all), (std::vector<int32_t>{-7}));
  EValue* rows = h.empty<int32_t>({2, 1});
  ASSERT_EQ(h.call("aten::amax", {x, h.ints({1}), h.b(true), rows}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(rows), (std::vector<int32_t>{4, 9}));
  EValue* xb = h.bool_tensor({2, 2}, {0, 1, 0, 0});
  EValue* yb = h.empty_of(ScalarType::Bool, {2});
  ASSERT_EQ(h.call("aten::amax", {xb, h.ints({1}), h.b(false), yb}), Error::Ok);
  EXPECT_EQ(h.values<uint8_t>(yb), (std::vector<uint8_t>{1, 0}));
}

TEST(OpAmaxAmin, PropagateNaN) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, {1, kNaN, 3, 4, 5, 6});
  EValue* cols = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::amax", {x, h.ints({0}), h.b(false), cols}), Error::Ok);
  std::vector<float> got = h.values<float>(cols);
  EXPECT_EQ(got[0], 4);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], 6);
  EValue* rows = h.empty<float>({2});
  ASSERT_EQ(h.call("aten::amin", {x, h.ints({1}), h.b(false), rows}), Error::Ok);
  got = h.values<float>(rows);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 4);
}

TEST(OpAmaxAmin, RejectEmptyReducedDimRepeatedDimAndWrongOut) {
  KernelHarness h;
  EValue* e = h.empty<float>({0, 3});
  EXPECT_EQ(h.prepare_only("aten::amax", {e, h.ints({0}), h.b(false), h.empty<float>({3})}),
            Error::InvalidProgram);
  // Reducing a non-empty dim of an empty tensor is fine: the result is empty.
  EXPECT_EQ(h.call("aten::amax", {e, h.ints({1}), h.b(false), h.empty<float>({0})}), Error::Ok);
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::amax", {x, h.ints({1, -1}), h.b(false), h.empty<float>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::amax", {x, h.ints({1}), h.b(false), h.empty<float>({3})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::amin", {x, h.ints({1}), h.b(false), h.empty<double>({2})}),
            Error::InvalidProgram);
}

// --- argmax / argmin / max.dim / min.dim ---

TEST(OpArgmaxArgmin, TiesGiveFirstIndexAlongEachDim) {
  KernelHarness h;
  // [[3, 1, 3], [0, 0, -2]]
  EValue* x = h.tensor<float>({2, 3}, {3, 1, 3, 0, 0, -2});
  EValue* a1 = h.empty<int64_t>({2});
  ASSERT_EQ(h.call("aten::argmax", {x, h.i(1), h.b(false), a1}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(a1), (std::vector<int64_t>{0, 0}));
  EValue* n1 = h.empty<int64_t>({2, 1});
  ASSERT_EQ(h.call("aten::argmin", {x, h.i(-1), h.b(true), n1}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(n1), (std::vector<int64_t>{1, 2}));
  EValue* a0 = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::argmax", {x, h.i(0), h.b(false), a0}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(a0), (std::vector<int64_t>{0, 0, 0}));
  EValue* n0 = h.empty<int64_t>({3});
  ASSERT_EQ(h.call("aten::argmin", {x, h.i(0), h.b(false), n0}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(n0), (std::vector<int64_t>{1, 1, 1}));
}

TEST(OpArgmaxArgmin, NoneDimFlattensAndKeepdimGivesOnes) {
  KernelHarness h;
  EValue* x = h.tensor<int8_t>({2, 2}, {5, -3, 7, 7});
  EValue* flat = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::argmax", {x, h.none(), h.b(false), flat}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(flat), (std::vector<int64_t>{2}));
  EValue* kept = h.empty<int64_t>({1, 1});
  ASSERT_EQ(h.call("aten::argmin", {x, h.none(), h.b(true), kept}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(kept), (std::vector<int64_t>{1}));
  EValue* scalar = h.tensor<double>({}, {2.5});
  EValue* zero = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::argmax", {scalar, h.i(0), h.b(true), zero}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(zero), (std::vector<int64_t>{0}));
}

TEST(OpArgmaxArgmin, FirstNaNWinsForBoth) {
  KernelHarness h;
  EValue* x = h.tensor<float>({5}, {1, kNaN, 9, kNaN, -9});
  EValue* a = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::argmax", {x, h.i(0), h.b(false), a}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(a)[0], 1);
  EValue* n = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::argmin", {x, h.i(0), h.b(false), n}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(n)[0], 1);
}

TEST(OpArgmaxArgmin, RejectBoolEmptyDimAndNonInt64Out) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::argmax", {h.bool_tensor({2}, {0, 1}), h.i(0), h.b(false),
                                            h.empty<int64_t>({})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::argmax", {h.empty<float>({2, 0}), h.i(1), h.b(false),
                                            h.empty<int64_t>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::argmin", {h.empty<float>({0}), h.none(), h.b(false),
                                            h.empty<int64_t>({})}),
            Error::InvalidProgram);
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::argmax", {x, h.i(1), h.b(false), h.empty<int32_t>({2})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::argmax", {x, h.i(2), h.b(false), h.empty<int64_t>({2})}),
            Error::InvalidProgram);
}

TEST(OpMaxMinDim, ReturnValuesAndFirstIndicesAlongMiddleDim) {
  // [2, 3, 2] over dim 1: max/min of each (outer, inner) column of 3.
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({2, 3, 2}, {1, 9, 4, 9, 4, 0, -5, 2, -5, 8, 3, 8});
  EValue* mv = h.empty<int64_t>({2, 2});
  EValue* mi = h.empty<int64_t>({2, 2});
  ASSERT_EQ(h.call("aten::max.dim", {x, h.i(1), h.b(false), mv, mi}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(mv), (std::vector<int64_t>{4, 9, 3, 8}));
  EXPECT_EQ(h.values<int64_t>(mi), (std::vector<int64_t>{1, 0, 2, 1}));
  EValue* nv = h.empty<int64_t>({2, 1, 2});
  EValue* ni = h.empty<int64_t>({2, 1, 2});
  ASSERT_EQ(h.call("aten::min.dim", {x, h.i(-2), h.b(true), nv, ni}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(nv), (std::vector<int64_t>{1, 0, -5, 2}));
  EXPECT_EQ(h.values<int64_t>(ni), (std::vector<int64_t>{0, 2, 0, 0}));
}

TEST(OpMaxMinDim, MatchNaiveScanOnRandomFloatsAndRejectBadOuts) {
  KernelHarness h;
  const std::vector<float> data = random_floats(3 * 7 * 5, 21);
  EValue* x = h.tensor<float>({3, 7, 5}, data);
  EValue* v = h.empty<float>({3, 5});
  EValue* i = h.empty<int64_t>({3, 5});
  ASSERT_EQ(h.call("aten::max.dim", {x, h.i(1), h.b(false), v, i}), Error::Ok);
  for (int o = 0; o < 3; ++o) {
    for (int j = 0; j < 5; ++j) {
      int best = 0;
      for (int k = 1; k < 7; ++k) {
        if (data[(o * 7 + k) * 5 + j] > data[(o * 7 + best) * 5 + j]) best = k;
      }
      EXPECT_EQ(h.values<int64_t>(i)[o * 5 + j], best);
      EXPECT_EQ(h.values<float>(v)[o * 5 + j], data[(o * 7 + best) * 5 + j]);
    }
  }
  EXPECT_EQ(h.prepare_only("aten::max.dim", {x, h.i(1), h.b(false), v, h.empty<int32_t>({3, 5})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::min.dim", {x, h.i(1), h.b(false), h.empty<double>({3, 5}), i}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::min.dim", {x, h.none(), h.b(false), v, i}), Error::InvalidProgram);
}

// --- index_select ---

TEST(OpIndexSelect, GathersRepeatedIndicesAlongMiddleDimWithInt32Index) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3, 2}, iota_as<float>(12));
  EValue* idx = h.tensor<int32_t>({4}, {2, 0, 2, 1});
  EValue* y = h.empty<float>({2, 4, 2});
  ASSERT_EQ(h.call("aten::index_select", {x, h.i(1), idx, y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y),
            (std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3, 10, 11, 6, 7, 10, 11, 8, 9}));
}

TEST(OpIndexSelect, HandlesZeroDSelfAndEmptyIndex) {
  KernelHarness h;
  EValue* x = h.tensor<int64_t>({}, {42});
  EValue* y = h.empty<int64_t>({});
  ASSERT_EQ(h.call("aten::index_select", {x, h.i(0), h.tensor<int64_t>({1}, {0}), y}), Error::Ok);
  EXPECT_EQ(h.values<int64_t>(y)[0], 42);
  EValue* m = h.tensor<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(h.call("aten::index_select", {m, h.i(0), h.tensor<int64_t>({0}, {}), h.empty<float>({0, 2})}),
            Error::Ok);
}

TEST(OpIndexSelect, FailsAtRunOnOutOfRangeOrNegativeIndex) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {1, 2, 3});
  EXPECT_EQ(h.call("aten::index_select", {x, h.i(0), h.tensor<int64_t>({2}, {0, 3}), h.empty<float>({2})}),
            Error::ExecutionFailed);
  EXPECT_EQ(h.call("aten::index_select", {x, h.i(0), h.tensor<int64_t>({1}, {-1}), h.empty<float>({1})}),
            Error::ExecutionFailed);
}

TEST(OpIndexSelect, RejectsFloatOr2dIndexBadDimAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EXPECT_EQ(h.prepare_only("aten::index_select",
                           {x, h.i(1), h.tensor<float>({1}, {0}), h.empty<float>({2, 1})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::index_select",
                           {x, h.i(1), h.tensor<int64_t>({1, 1}, {0}), h.empty<float>({2, 1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::index_select",
                           {x, h.i(2), h.tensor<int64_t>({1}, {0}), h.empty<float>({2, 1})}),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::index_select",
                           {x, h.i(1), h.tensor<int64_t>({1}, {0}), h.empty<float>({1, 3})}),
            Error::InvalidProgram);
}

// --- index.Tensor ---

TEST(OpIndexTensor, SingleIndexTensorOnSecondDimWithNegativeAnd2dIndex) {
  // x[:, idx] with x [2, 3] and idx [[2, -3], [-1, 1]] -> [2, 2, 2].
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EValue* idx = h.tensor<int64_t>({2, 2}, {2, -3, -1, 1});
  EValue* y = h.empty<float>({2, 2, 2});
  ASSERT_EQ(h.call("aten::index.Tensor", {x, h.tensors({nullptr, idx}, /*optional=*/true), y}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{2, 0, 2, 1, 5, 3, 5, 4}));
}

TEST(OpIndexTensor, IndexOnFirstDimGathersRows) {
  KernelHarness h;
  EValue* x = h.tensor<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6});
  EValue* idx = h.tensor<int32_t>({2}, {2, 0});
  EValue* y = h.empty<int32_t>({2, 2});
  ASSERT_EQ(h.call("aten::index.Tensor", {x, h.tensors({idx}, true), y}), Error::Ok);
  EXPECT_EQ(h.values<int32_t>(y), (std::vector<int32_t>{5, 6, 1, 2}));
}

TEST(OpIndexTensor, FailsAtRunOutOfRange) {
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {1, 2, 3});
  EXPECT_EQ(h.call("aten::index.Tensor", {x, h.tensors({h.tensor<int64_t>({1}, {3})}, true), h.empty<float>({1})}),
            Error::ExecutionFailed);
  EXPECT_EQ(h.call("aten::index.Tensor", {x, h.tensors({h.tensor<int64_t>({1}, {-4})}, true), h.empty<float>({1})}),
            Error::ExecutionFailed);
}

TEST(OpIndexTensor, SeveralIndexTensorsBroadcastAndKeepTheirPlaceWhenAdjacent) {
  // x [2, 3, 4]: x[:, i, j] with i [2, 1] and j [3] broadcast to [2, 3] -> [2, 2, 3].
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3, 4}, iota_as<float>(24));
  EValue* i = h.tensor<int64_t>({2, 1}, {0, -1});
  EValue* j = h.tensor<int32_t>({3}, {3, 0, 1});
  EValue* y = h.empty<float>({2, 2, 3});
  ASSERT_EQ(h.call("aten::index.Tensor", {x, h.tensors({nullptr, i, j}, true), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{3, 0, 1, 11, 8, 9, 15, 12, 13, 23, 20, 21}));
}

TEST(OpIndexTensor, SeparatedIndexTensorsPutTheBroadcastDimsFirst) {
  // x [2, 3, 4]: x[i, :, j] with i, j [2] -> [2, 3]: out[b, c] = x[i[b], c, j[b]].
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3, 4}, iota_as<float>(24));
  EValue* i = h.tensor<int64_t>({2}, {1, 0});
  EValue* j = h.tensor<int64_t>({2}, {2, 3});
  EValue* y = h.empty<float>({2, 3});
  ASSERT_EQ(h.call("aten::index.Tensor", {x, h.tensors({i, nullptr, j}, true), y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{14, 18, 22, 3, 7, 11}));
}

TEST(OpIndexTensor, RejectsMasksAllNoneNonBroadcastingAndWrongOut) {
  KernelHarness h;
  EValue* x = h.tensor<float>({2, 3}, iota_as<float>(6));
  EValue* i0 = h.tensor<int64_t>({1}, {0});
  EXPECT_EQ(h.prepare_only("aten::index.Tensor",
                           {x, h.tensors({h.bool_tensor({2}, {1, 0})}, true), h.empty<float>({1, 3})}),
            Error::OperatorMissing);  // the result's shape would depend on the mask
  EXPECT_EQ(h.prepare_only("aten::index.Tensor", {x, h.tensors({nullptr}, true), h.empty<float>({2, 3})}),
            Error::InvalidProgram);  // torch refuses it too
  EXPECT_EQ(h.prepare_only("aten::index.Tensor",
                           {x, h.tensors({h.tensor<int64_t>({2}, {0, 1}), h.tensor<int64_t>({3}, {0, 1, 2})}, true),
                            h.empty<float>({3})}),
            Error::InvalidProgram);  // [2] and [3] do not broadcast
  EXPECT_EQ(h.prepare_only("aten::index.Tensor",
                           {x, h.tensors({nullptr, nullptr, i0}, true), h.empty<float>({2, 3})}),
            Error::InvalidProgram);  // more indices than dims
  EXPECT_EQ(h.prepare_only("aten::index.Tensor", {x, h.tensors({i0}, true), h.empty<float>({3})}),
            Error::InvalidProgram);  // out should be [1, 3]
  EXPECT_EQ(h.prepare_only("aten::index.Tensor", {x, h.tensors({i0}), h.empty<float>({1, 3})}),
            Error::InvalidProgram);  // a plain TensorList
}

}  // namespace
}  // namespace tern
