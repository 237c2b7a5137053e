// Tests of the portable kernels that slide a window over spatial dims:
// convolution (1d, 2d, 3d, transposed, grouped), max and average pooling,
// adaptive average pooling. Expected values come from hand computation or
// from naive double-precision loops written here, never from the kernels
// themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"
#include "tests/cpp/random_util.h"

namespace tern {
namespace {

using test::KernelHarness;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::random_floats;

// Each element within tol * (max |ref| + |ref[i]|), the tolerance the kernels
// promise (tests/cpp/compare.h).
void expect_close(const std::vector<float>& got, const std::vector<double>& ref,
                  double tol = 1e-4) {
  EXPECT_TRUE(test::all_close(got, ref, tol));
}

// ---------------------------------------------------------------- convolution

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

int64_t ref_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

std::vector<double> ref_conv(const ConvCase& cc, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t oh = ref_out_size(cc.h, cc.kh, cc.sh, cc.ph, cc.dh);
  const int64_t ow = ref_out_size(cc.w, cc.kw, cc.sw, cc.pw, cc.dw);
  const int64_t cg = cc.c / cc.groups, ocg = cc.oc / cc.groups;
  std::vector<double> out(cc.n * cc.oc * oh * ow);
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < cc.oc; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double s = cc.bias ? b[o] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < cc.kh; ++i)
              for (int64_t j = 0; j < cc.kw; ++j) {
                const int64_t ih = y * cc.sh - cc.ph + i * cc.dh;
                const int64_t iw = z * cc.sw - cc.pw + j * cc.dw;
                if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
                const int64_t c = (o / ocg) * cg + ci;
                s += double(x[((n * cc.c + c) * cc.h + ih) * cc.w + iw]) *
                     w[((o * cg + ci) * cc.kh + i) * cc.kw + j];
              }
          out[((n * cc.oc + o) * oh + y) * ow + z] = s;
        }
  return out;
}

// Runs aten::convolution on random data; `one_d` passes [n, c, w] tensors.
void check_conv(const ConvCase& cc, bool one_d = false) {
  KernelHarness h;
  const int64_t oh = ref_out_size(cc.h, cc.kh, cc.sh, cc.ph, cc.dh);
  const int64_t ow = ref_out_size(cc.w, cc.kw, cc.sw, cc.pw, cc.dw);
  std::vector<float> x = random_floats(cc.n * cc.c * cc.h * cc.w, 20);
  std::vector<float> w = random_floats(cc.oc * (cc.c / cc.groups) * cc.kh * cc.kw, 21);
  std::vector<float> b = random_floats(cc.oc, 22);
  EValue *xv, *wv, *out, *stride, *pad, *dil;
  if (one_d) {
    xv = h.tensor<float>({cc.n, cc.c, cc.w}, x);
    wv = h.tensor<float>({cc.oc, cc.c / cc.groups, cc.kw}, w);
    out = h.empty<float>({cc.n, cc.oc, ow});
    stride = h.ints({cc.sw}), pad = h.ints({cc.pw}), dil = h.ints({cc.dw});
  } else {
    xv = h.tensor<float>({cc.n, cc.c, cc.h, cc.w}, x);
    wv = h.tensor<float>({cc.oc, cc.c / cc.groups, cc.kh, cc.kw}, w);
    out = h.empty<float>({cc.n, cc.oc, oh, ow});
    stride = h.ints({cc.sh, cc.sw}), pad = h.ints({cc.ph, cc.pw}), dil = h.ints({cc.dh, cc.dw});
  }
  EValue* bias = cc.bias ? h.tensor<float>({cc.oc}, b) : h.none();
  ASSERT_EQ(h.call("aten::convolution", {xv, wv, bias, stride, pad, dil, h.b(false),
                                         h.ints({0, 0}), h.i(cc.groups), out}),
            Error::Ok);
  expect_close(h.values<float>(out), ref_conv(cc, x, w, b));
}

TEST(OpConvolution, MatchesReferenceOverStridePaddingDilationGroups) {
  const ConvCase cases[] = {
      // n  c   h   w  oc kh kw sh sw ph pw dh dw g  bias
      {1, 3, 8, 8, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, true},      // plain 3x3
      {2, 5, 9, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, false},    // same padding, batch 2
      {1, 4, 11, 10, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, true},   // stride 2
      {1, 3, 12, 13, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1, true},    // dilation 2
      {2, 6, 7, 9, 4, 3, 2, 2, 1, 1, 0, 1, 2, 2, true},      // groups 2, mixed h/w
      {1, 8, 6, 6, 33, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},     // 1x1 pointwise
      {1, 8, 6, 6, 8, 1, 1, 2, 2, 0, 0, 1, 1, 4, false},     // 1x1 stride 2, groups
      {2, 7, 10, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 7, true},     // depthwise
      {1, 5, 13, 12, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5, false},   // depthwise stride 2
      {1, 4, 9, 9, 4, 5, 3, 1, 2, 4, 2, 2, 1, 4, true},      // depthwise dilated
      {1, 3, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, true},      // channel multiplier 2
      {1, 2, 5, 5, 3, 5, 5, 1, 1, 0, 0, 1, 1, 1, true},      // kernel = image
      {1, 64, 32, 30, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  // several im2col chunks
  };
  for (const ConvCase& cc : cases) {
    SCOPED_TRACE(::testing::Message() << "c=" << cc.c << " oc=" << cc.oc << " k=" << cc.kh << "x"
                                      << cc.kw << " s=" << cc.sh << " groups=" << cc.groups);
    check_conv(cc);
  }
}

// Large enough that 2 and 3 threads split the work (the harness checks the
// bits equal the 1-thread run's): pixels across images and groups, partial
// micro-tiles at range ends, channel planes for depthwise.
TEST(OpConvolution, SplitsOverThreadsWithTheSameBits) {
  const ConvCase cases[] = {
      // n  c   h   w  oc kh kw sh sw ph pw dh dw g  bias
      {1, 16, 19, 21, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},   // 3x3, 399 pixels
      {2, 32, 13, 15, 47, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},   // pointwise, 2 images
      {3, 12, 11, 9, 18, 3, 3, 2, 1, 1, 1, 1, 1, 3, false},   // groups 3, 3 images
      {2, 33, 28, 27, 33, 3, 3, 1, 1, 1, 1, 1, 1, 33, true},  // depthwise, 66 planes
      {1, 9, 4, 4, 300, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},    // 16 pixels, many channels
  };
  for (const ConvCase& cc : cases) {
    SCOPED_TRACE(::testing::Message() << "c=" << cc.c << " oc=" << cc.oc << " groups=" << cc.groups);
    check_conv(cc);
  }
}

// No output channels (weight [0, c, k, k]: PyTorch refuses it) or no input
// channels (PyTorch gives a 0-channel output): refused at prepare, naming the
// weight. Their work per pixel is 0, which the thread split once divided by.
TEST(OpConvolution, RefusesNoOutputOrInputChannels) {
  KernelHarness h;
  std::string why;
  auto conv = [&](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> out) {
    return h.prepare_only("aten::convolution", {h.empty<float>(x), h.empty<float>(w), h.none(), h.ints({1, 1}),
                                                h.ints({0, 0}), h.ints({1, 1}), h.b(false), h.ints({0, 0}), h.i(1),
                                                h.empty<float>(out)}, &why);
  };
  EXPECT_EQ(conv({1, 1, 5, 5}, {0, 1, 3, 3}, {1, 0, 3, 3}), Error::InvalidProgram);
  EXPECT_NE(why.find("weight [0, 1, ...] over 1 input channels: no channels"), std::string::npos) << why;
  EXPECT_EQ(conv({1, 1, 5, 5}, {0, 1, 1, 1}, {1, 0, 5, 5}), Error::InvalidProgram);
  EXPECT_EQ(conv({2, 0, 4, 4}, {3, 0, 3, 3}, {2, 3, 2, 2}), Error::InvalidProgram);
  EXPECT_EQ(conv({1, 1, 5, 5}, {2, 1, 3, 3}, {1, 2, 3, 3}), Error::Ok);
}

TEST(OpConvolution, RunsOneDimensionalAsHeightOne) {
  check_conv({2, 4, 1, 20, 6, 1, 3, 1, 2, 0, 1, 1, 2, 2, true}, true);
  check_conv({1, 6, 1, 15, 6, 1, 5, 1, 1, 0, 2, 1, 1, 6, false}, true);  // depthwise
}

TEST(OpConvolution, RejectsGroupMismatchWrongOutAndInt32TakesTransposed) {
  KernelHarness h;
  auto args = [&](EValue* x, EValue* w, bool transposed, int64_t groups, EValue* out) {
    return std::vector<EValue*>{x, w, h.none(), h.ints({1, 1}), h.ints({0, 0}), h.ints({1, 1}),
                                h.b(transposed), h.ints({0, 0}), h.i(groups), out};
  };
  EValue* x = h.empty<float>({1, 4, 5, 5});
  EValue* w = h.empty<float>({6, 4, 3, 3});
  EValue* good_out = h.empty<float>({1, 6, 3, 3});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, false, 1, good_out)), Error::Ok);
  // transposed (float32 on the direct path): weight [c, oc, k, k]
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, h.empty<float>({4, 6, 3, 3}), true, 1,
                                                     h.empty<float>({1, 6, 7, 7}))),
            Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, true, 1, good_out)),
            Error::InvalidProgram);  // weight's first dim (6) is not the input's channels (4)
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, false, 4, good_out)),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x, w, false, 1, h.empty<float>({1, 6, 5, 5}))),
            Error::InvalidProgram);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(h.empty<int32_t>({1, 4, 5, 5}), w, false, 1,
                                                     good_out)),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::convolution", args(h.empty<int64_t>({1, 4, 5, 5}), w, false, 1,
                                                     good_out)),
            Error::InvalidProgram);  // weight float32, input int64
  EXPECT_EQ(h.prepare_only("aten::convolution", args(h.empty<float>({1, 4, 2, 2}), w, false, 1,
                                                     h.empty<float>({1, 6, 0, 0}))),
            Error::InvalidProgram);  // kernel larger than the input
}

// The direct path (util/conv_direct.h): 3-d and transposed in float64, int64
// and float32, output_padding below stride or dilation as torch requires.
TEST(OpConvolution, DirectPathTakes3dAndTransposedAndChecksOutputPadding) {
  KernelHarness h;
  auto args = [&](EValue* x, EValue* w, bool transposed, std::vector<int64_t> out_pad,
                  EValue* out) {
    return std::vector<EValue*>{x, w, h.none(), h.ints({2}), h.ints({0}), h.ints({1}),
                                h.b(transposed), h.ints(out_pad), h.i(1), out};
  };
  EValue* x3 = h.empty<int64_t>({1, 2, 5, 5, 5});
  EValue* w3 = h.empty<int64_t>({3, 2, 3, 3, 3});
  EValue* out3 = h.empty<int64_t>({1, 3, 2, 2, 2});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x3, w3, false, {0}, out3)), Error::Ok);
  EValue* x3f = h.empty<float>({1, 2, 5, 5, 5});
  EValue* w3f = h.empty<float>({3, 2, 3, 3, 3});
  EValue* out3f = h.empty<float>({1, 3, 2, 2, 2});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x3f, w3f, false, {0}, out3f)), Error::Ok);
  // transposed: weight [c, oc, k], out (5 - 1) * 2 + 2 + 1 + output_padding
  EValue* x1 = h.empty<double>({1, 2, 5});
  EValue* w1 = h.empty<double>({2, 3, 3});
  EValue* out12 = h.empty<double>({1, 3, 12});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x1, w1, true, {1}, out12)), Error::Ok);
  EValue* out13 = h.empty<double>({1, 3, 13});
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x1, w1, true, {2}, out13)),
            Error::InvalidProgram);  // output_padding 2 >= stride 2 and dilation 1
  EXPECT_EQ(h.prepare_only("aten::convolution", args(x1, w1, true, {0}, out12)),
            Error::InvalidProgram);  // out should be 11 long
}

// ---------------------------------------------------------------- pooling

struct PoolCase {
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;  // oh, ow checked against PyTorch
  bool ceil_mode;
};

// ATen's max pool: the first strict maximum of the in-bounds taps, NaN wins.
void ref_max_pool(const PoolCase& pc, const float* x, double* out, int64_t* index) {
  for (int64_t y = 0; y < pc.oh; ++y)
    for (int64_t z = 0; z < pc.ow; ++z) {
      double best = -INFINITY;
      int64_t at = -1;
      for (int64_t i = 0; i < pc.kh; ++i)
        for (int64_t j = 0; j < pc.kw; ++j) {
          const int64_t r = y * pc.sh - pc.ph + i * pc.dh, c = z * pc.sw - pc.pw + j * pc.dw;
          if (r < 0 || r >= pc.h || c < 0 || c >= pc.w) continue;
          if (at < 0 || x[r * pc.w + c] > best || std::isnan(x[r * pc.w + c])) {
            best = x[r * pc.w + c], at = r * pc.w + c;
          }
        }
      out[y * pc.ow + z] = best;
      index[y * pc.ow + z] = at;
    }
}

TEST(OpMaxPool2d, HandComputed2x2WindowsWithIndices) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 1, 4, 4}, {1, 5, 2, 0, 3, 4, 8, 7, 9, 0, 1, 1, 2, 6, 3, 5});
  EValue* out = h.empty<float>({1, 1, 2, 2});
  EValue* idx = h.empty<int64_t>({1, 1, 2, 2});
  ASSERT_EQ(h.call("aten::max_pool2d_with_indices", {x, h.ints({2, 2}), h.ints({}), h.ints({0}),
                                                     h.ints({1}), h.b(false), out, idx}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{5, 8, 9, 5}));
  EXPECT_EQ(h.values<int64_t>(idx), (std::vector<int64_t>{1, 6, 8, 15}));
}

TEST(OpMaxPool2d, TiesKeepTheFirstIndexAndNaNWins) {
  KernelHarness h;
  EValue* x = h.tensor<float>({1, 2, 4}, {2, 2, 1, kNaN, 2, 2, 3, 3});
  EValue* out = h.empty<float>({1, 1, 2});
  EValue* idx = h.empty<int64_t>({1, 1, 2});
  ASSERT_EQ(h.call("aten::max_pool2d_with_indices", {x, h.ints({2, 2}), h.ints({2, 2}),
                                                     h.ints({0, 0}), h.ints({1, 1}), h.b(false),
                                                     out, idx}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out)[0], 2.f);
  EXPECT_TRUE(std::isnan(h.values<float>(out)[1]));
  EXPECT_EQ(h.values<int64_t>(idx), (std::vector<int64_t>{0, 3}));
}

TEST(OpMaxPool2d, MatchesReferenceWithPaddingDilationCeilModeAnd3dInput) {
  const PoolCase cases[] = {
      {6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 4, 4, true},   // ceil adds a window
      {5, 5, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, true},   // ceil's last window would start in padding
      {5, 7, 2, 2, 2, 2, 0, 0, 1, 1, 3, 4, true},
      {9, 8, 3, 2, 2, 1, 1, 1, 2, 3, 4, 7, false},  // dilation
      {4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4, 4, false},
  };
  for (const PoolCase& pc : cases) {
    KernelHarness h;
    const int64_t planes = 3;
    std::vector<float> x = random_floats(planes * pc.h * pc.w, 30);
    x[4] = kNaN;
    EValue* out = h.empty<float>({planes, pc.oh, pc.ow});
    EValue* idx = h.empty<int64_t>({planes, pc.oh, pc.ow});
    ASSERT_EQ(h.call("aten::max_pool2d_with_indices",
                     {h.tensor<float>({planes, pc.h, pc.w}, x), h.ints({pc.kh, pc.kw}),
                      h.ints({pc.sh, pc.sw}), h.ints({pc.ph, pc.pw}), h.ints({pc.dh, pc.dw}),
                      h.b(pc.ceil_mode), out, idx}),
              Error::Ok);
    const int64_t plane_out = pc.oh * pc.ow;
    std::vector<double> want(planes * plane_out);
    std::vector<int64_t> want_idx(planes * plane_out);
    for (int64_t p = 0; p < planes; ++p) {
      ref_max_pool(pc, x.data() + p * pc.h * pc.w, want.data() + p * plane_out,
                   want_idx.data() + p * plane_out);
    }
    std::vector<float> got = h.values<float>(out);
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << i;
      else EXPECT_EQ(got[i], static_cast<float>(want[i])) << i;
    }
    EXPECT_EQ(h.values<int64_t>(idx), want_idx);
  }
}

TEST(OpMaxPool2d, RejectsPaddingOverHalfKernelWrongOutAndIndicesDtype) {
  KernelHarness h;
  auto call = [&](int64_t pad, EValue* out, EValue* idx) {
    return h.prepare_only("aten::max_pool2d_with_indices",
                          {h.empty<float>({1, 2, 6, 6}), h.ints({3, 3}), h.ints({2, 2}),
                           h.ints({pad, pad}), h.ints({1, 1}), h.b(true), out, idx});
  };
  EXPECT_EQ(call(1, h.empty<float>({1, 2, 4, 4}), h.empty<int64_t>({1, 2, 4, 4})), Error::Ok);
  EXPECT_EQ(call(2, h.empty<float>({1, 2, 4, 4}), h.empty<int64_t>({1, 2, 4, 4})),
            Error::InvalidProgram);
  EXPECT_EQ(call(1, h.empty<float>({1, 2, 3, 3}), h.empty<int64_t>({1, 2, 3, 3})),
            Error::InvalidProgram);
  EXPECT_EQ(call(1, h.empty<float>({1, 2, 4, 4}), h.empty<int32_t>({1, 2, 4, 4})),
            Error::OperatorMissing);
}

TEST(OpAvgPool2d, HandComputedCeilModeWithPaddingCounted) {
  // torch.nn.functional.avg_pool2d(arange(25).view(1, 5, 5), 3, 2, 1, ceil_mode=True)
  KernelHarness h;
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[i] = float(i);
  EValue* out = h.empty<float>({1, 3, 3});
  ASSERT_EQ(h.call("aten::avg_pool2d", {h.tensor<float>({1, 5, 5}, x), h.ints({3}), h.ints({2}),
                                        h.ints({1}), h.b(true), h.b(true), h.none(), out}),
            Error::Ok);
  expect_close(h.values<float>(out),
               {12.0 / 9, 27.0 / 9, 16.0 / 6, 63.0 / 9, 108.0 / 9, 54.0 / 6, 48.0 / 6, 78.0 / 6,
                28.0 / 3});
}

TEST(OpAvgPool2d, MatchesReferenceForEachDivisorRule) {
  const int64_t hh = 7, ww = 6, k = 3, s = 2, p = 1, oh = 4, ow = 4;  // ceil_mode: 4 x 4
  std::vector<float> x = random_floats(2 * 2 * hh * ww, 31);
  for (int mode = 0; mode < 3; ++mode) {  // count_include_pad, exclude, divisor_override = 5
    KernelHarness h;
    EValue* out = h.empty<float>({2, 2, oh, ow});
    ASSERT_EQ(h.call("aten::avg_pool2d", {h.tensor<float>({2, 2, hh, ww}, x), h.ints({k, k}),
                                          h.ints({s, s}), h.ints({p, p}), h.b(true),
                                          h.b(mode == 0), mode == 2 ? h.i(5) : h.none(), out}),
              Error::Ok);
    std::vector<double> want;
    for (int64_t pl = 0; pl < 4; ++pl)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = 0;
          int64_t valid = 0, padded = 0;
          for (int64_t r = y * s - p; r < y * s - p + k; ++r)
            for (int64_t c = z * s - p; c < z * s - p + k; ++c) {
              if (r < hh + p && c < ww + p) ++padded;  // inside the padded input
              if (r < 0 || r >= hh || c < 0 || c >= ww) continue;
              sum += x[(pl * hh + r) * ww + c], ++valid;
            }
          want.push_back(valid == 0 ? 0.0 : sum / (mode == 2 ? 5 : mode == 0 ? padded : valid));
        }
    SCOPED_TRACE(::testing::Message() << "mode " << mode);
    expect_close(h.values<float>(out), want);
  }
}

TEST(OpAvgPool2d, RejectsZeroDivisorOverride) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::avg_pool2d", {h.empty<float>({1, 4, 4}), h.ints({2}), h.ints({}),
                                                h.ints({0}), h.b(false), h.b(true), h.i(0),
                                                h.empty<float>({1, 2, 2})}),
            Error::InvalidProgram);
}

// The dtypes eager's CPU kernels refuse stay refused at load (OperatorMissing).
TEST(OpPool2d, RefusesDtypesEagerRefuses) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::max_pool2d_with_indices",
                           {h.empty<bool>({1, 4, 4}), h.ints({2}), h.ints({}), h.ints({0}), h.ints({1}),
                            h.b(false), h.empty<bool>({1, 2, 2}), h.empty<int64_t>({1, 2, 2})}),
            Error::OperatorMissing);
  auto avg = [&](EValue* x, EValue* out) {
    return h.prepare_only("aten::avg_pool2d",
                          {x, h.ints({2}), h.ints({}), h.ints({0}), h.b(false), h.b(true), h.none(), out});
  };
  EXPECT_EQ(avg(h.empty<int32_t>({1, 4, 4}), h.empty<int32_t>({1, 2, 2})), Error::OperatorMissing);
  EXPECT_EQ(avg(h.empty<uint8_t>({1, 4, 4}), h.empty<uint8_t>({1, 2, 2})), Error::OperatorMissing);
  EXPECT_EQ(avg(h.empty<int64_t>({1, 4, 4}), h.empty<int64_t>({1, 2, 2})), Error::Ok);
  EXPECT_EQ(h.prepare_only("aten::_adaptive_avg_pool2d", {h.empty<int64_t>({1, 4, 4}), h.ints({2, 2}),
                                                          h.empty<int64_t>({1, 2, 2})}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only("aten::relu", {h.empty<bool>({3}), h.empty<bool>({3})}), Error::OperatorMissing);
}

TEST(OpAdaptiveAvgPool2d, MatchesStartEndIndexFormula) {
  const int64_t hh = 5, ww = 7, oh = 3, ow = 4;
  KernelHarness h;
  std::vector<float> x = random_floats(2 * 3 * hh * ww, 32);
  EValue* out = h.empty<float>({2, 3, oh, ow});
  ASSERT_EQ(h.call("aten::_adaptive_avg_pool2d",
                   {h.tensor<float>({2, 3, hh, ww}, x), h.ints({oh, ow}), out}),
            Error::Ok);
  // rows of output 0..2 over h = 5: [0, 2), [1, 4), [3, 5)
  const int64_t r0[] = {0, 1, 3}, r1[] = {2, 4, 5};
  // columns of output 0..3 over w = 7: [0, 2), [1, 4), [3, 6), [5, 7)
  const int64_t c0[] = {0, 1, 3, 5}, c1[] = {2, 4, 6, 7};
  std::vector<double> want;
  for (int64_t pl = 0; pl < 6; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        double sum = 0;
        for (int64_t r = r0[y]; r < r1[y]; ++r)
          for (int64_t c = c0[z]; c < c1[z]; ++c) sum += x[(pl * hh + r) * ww + c];
        want.push_back(sum / double((r1[y] - r0[y]) * (c1[z] - c0[z])));
      }
  expect_close(h.values<float>(out), want);
}

TEST(OpAdaptiveAvgPool2d, GlobalPoolOf3dInputIsPlaneMean) {
  KernelHarness h;
  EValue* out = h.empty<float>({2, 1, 1});
  ASSERT_EQ(h.call("aten::_adaptive_avg_pool2d",
                   {h.tensor<float>({2, 2, 2}, {1, 2, 3, 4, -1, -1, -1, 7}), h.ints({1, 1}), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out), (std::vector<float>{2.5f, 1.f}));
}

TEST(OpAdaptiveAvgPool2d, RejectsWrongOutSizes) {
  KernelHarness h;
  EXPECT_EQ(h.prepare_only("aten::_adaptive_avg_pool2d",
                           {h.empty<float>({1, 2, 8, 8}), h.ints({2, 2}),
                            h.empty<float>({1, 2, 4, 4})}),
            Error::InvalidProgram);
}

}  // namespace
}  // namespace tern
