// float16 / bfloat16 storage and conversions (kernels/portable/util/half.h)
// against IEEE 754 bit patterns worked out by hand, and a few kernels on
// 16-bit tensors (elementwise in float32 opmath, a float32-staged matmul,
// casts). Parity with eager on whole models is in
// tests/python/test_half_precision.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/portable/util/half.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using portable::BFloat16;
using portable::bfloat16_bits_to_float;
using portable::float_to_bfloat16_bits;
using portable::float_to_half_bits;
using portable::Half;
using portable::half_bits_to_float;
using test::KernelHarness;

float f(uint32_t bits) { return portable::bits_float(bits); }

TEST(Half, FromFloatKnownPatterns) {
  EXPECT_EQ(float_to_half_bits(0.f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.f), 0xC000);
  EXPECT_EQ(float_to_half_bits(0.5f), 0x3800);
  EXPECT_EQ(float_to_half_bits(65504.f), 0x7BFF);             // largest finite
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7BFF);           // just below the rounding edge
  EXPECT_EQ(float_to_half_bits(65520.f), 0x7C00);             // ties to even: rounds up to inf
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7C00);               // overflow
  EXPECT_EQ(float_to_half_bits(-1e10f), 0xFC00);
  EXPECT_EQ(float_to_half_bits(INFINITY), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -14)), 0x0400);  // least normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -24)), 0x0001);  // least subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.f, -24)), 0x0003);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1023.f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -25)), 0x0000);     // tie: to even (0)
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.f, -25)), 0x0002);     // 1.5 ulp: tie to even (2)
  EXPECT_EQ(float_to_half_bits(std::ldexp(5.f, -26)), 0x0001);     // 1.25 ulp: down
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -26)), 0x0000);     // underflow
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.f, -24)), 0x8001);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: to even (1 + 2^-9).
  EXPECT_EQ(float_to_half_bits(1.f + std::ldexp(1.f, -11)), 0x3C00);
  EXPECT_EQ(float_to_half_bits(1.f + std::ldexp(3.f, -11)), 0x3C02);
  EXPECT_EQ(float_to_half_bits(1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -20)), 0x3C01);  // above the tie
  EXPECT_EQ(float_to_half_bits(2047.f + 0.5f), 0x6800);  // 2047.5 -> 2048 (mantissa carries into the exponent)
  const uint16_t nan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::quiet_NaN()) & 0x8000, 0x8000);
  EXPECT_NE(float_to_half_bits(f(0x7F800001)) & 0x03FF, 0);  // a NaN whose payload is in the dropped bits
}

TEST(Half, ToFloatIsExact) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(half_bits_to_float(0x03FF), std::ldexp(1023.f, -24));
  EXPECT_EQ(half_bits_to_float(0x0400), std::ldexp(1.f, -14));
  EXPECT_EQ(half_bits_to_float(0x7C00), INFINITY);
  EXPECT_EQ(half_bits_to_float(0xFC00), -INFINITY);
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7C01)));
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  // Every finite half survives the round trip through float32.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) continue;  // NaN
    ASSERT_EQ(float_to_half_bits(half_bits_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(BFloat16, KnownPatterns) {
  EXPECT_EQ(float_to_bfloat16_bits(1.f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16_bits(-2.f), 0xC000);
  EXPECT_EQ(float_to_bfloat16_bits(0.f), 0x0000);
  EXPECT_EQ(float_to_bfloat16_bits(INFINITY), 0x7F80);
  EXPECT_EQ(float_to_bfloat16_bits(f(0x7F7FFFFF)), 0x7F80);  // FLT_MAX rounds up to inf
  EXPECT_EQ(float_to_bfloat16_bits(f(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bfloat16_bits(f(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bfloat16_bits(f(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(float_to_bfloat16_bits(f(0x00000001)), 0x0000);  // least float subnormal rounds to 0
  EXPECT_EQ(float_to_bfloat16_bits(f(0x00010000)), 0x0001);  // a bfloat16 subnormal is kept
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(float_to_bfloat16_bits(f(0x7F800001)), 0x7FC0);  // a NaN must not round to inf
  EXPECT_EQ(bfloat16_bits_to_float(0x3F80), 1.f);
  EXPECT_EQ(bfloat16_bits_to_float(0xFF80), -INFINITY);
  EXPECT_EQ(bfloat16_bits_to_float(0x0001), f(0x00010000));
}

TEST(Half, LimitsAndOpmath) {
  EXPECT_EQ(float(std::numeric_limits<Half>::max()), 65504.f);
  EXPECT_EQ(float(std::numeric_limits<Half>::lowest()), -65504.f);
  EXPECT_EQ(float(std::numeric_limits<Half>::infinity()), INFINITY);
  EXPECT_TRUE(std::isnan(float(std::numeric_limits<BFloat16>::quiet_NaN())));
  EXPECT_EQ(float(std::numeric_limits<BFloat16>::max()), f(0x7F7F0000));
  // An expression of Half values evaluates in float32 and rounds once:
  // 2048 + 1 - 1 in half arithmetic would be 2048 + 1 = 2048 (ties to even), then 2047.
  Half a(2048.f), b(1.f);
  Half r = a + b - b;
  EXPECT_EQ(float(r), 2048.f);
}

std::vector<Half> halves(std::vector<float> xs) { return std::vector<Half>(xs.begin(), xs.end()); }

std::vector<float> floats(const std::vector<Half>& hs) { return std::vector<float>(hs.begin(), hs.end()); }

TEST(HalfKernels, AddRoundsOnceAndPromotesWithFloat32) {
  KernelHarness h;
  EValue* x = h.tensor<Half>({3}, halves({2048, 1, 65504}));
  EValue* y = h.tensor<Half>({3}, halves({1, 0.5, 65504}));
  EValue* out = h.empty<Half>({3});
  EXPECT_EQ(h.call("aten::add.Tensor", {x, y, h.i(1), out}), Error::Ok);
  EXPECT_EQ(floats(h.values<Half>(out)), (std::vector<float>{2048, 1.5, INFINITY}));
  EValue* z = h.tensor<float>({3}, {0.25f, 0.25f, 0.25f});
  EValue* out32 = h.empty<float>({3});
  EXPECT_EQ(h.call("aten::add.Tensor", {x, z, h.i(1), out32}), Error::Ok);
  EXPECT_EQ(h.values<float>(out32), (std::vector<float>{2048.25f, 1.25f, 65504.25f}));
}

TEST(HalfKernels, MatmulIsStagedThroughFloat32) {
  KernelHarness h;
  // [1, 3] x [3, 1]: 256 + 1 + 1 = 258 in float32 (a bfloat16 value), where
  // a bfloat16 accumulator would lose both ones (256 + 1 rounds to 256).
  EValue* a = h.tensor<BFloat16>({1, 3}, {BFloat16(256.f), BFloat16(1.f), BFloat16(1.f)});
  EValue* b = h.tensor<BFloat16>({3, 1}, {BFloat16(1.f), BFloat16(1.f), BFloat16(1.f)});
  EValue* out = h.empty<BFloat16>({1, 1});
  EXPECT_EQ(h.call("aten::mm", {a, b, out}), Error::Ok);
  EXPECT_EQ(float(h.values<BFloat16>(out)[0]), 258.f);
}

TEST(HalfKernels, ToCopyBetweenHalfBFloat16AndIntegers) {
  KernelHarness h;
  EValue* x = h.tensor<Half>({4}, halves({1.5f, -2.75f, 300.f, 65504.f}));
  EValue* bf = h.empty<BFloat16>({4});
  EXPECT_EQ(h.call("aten::_to_copy", {x, h.i(int(ScalarType::BFloat16)), h.none(), h.none(), h.none(), h.b(false),
                                      h.none(), bf}),
            Error::Ok);
  std::vector<BFloat16> got = h.values<BFloat16>(bf);
  EXPECT_EQ(float(got[0]), 1.5f);
  EXPECT_EQ(float(got[1]), -2.75f);
  EXPECT_EQ(float(got[2]), 300.f);
  EXPECT_EQ(float(got[3]), 65536.f);  // 65504 has 11 significant bits; bfloat16 keeps 8
  EValue* i = h.empty<int32_t>({4});
  EXPECT_EQ(h.call("aten::_to_copy", {x, h.i(int(ScalarType::Int32)), h.none(), h.none(), h.none(), h.b(false),
                                      h.none(), i}),
            Error::Ok);
  EXPECT_EQ(h.values<int32_t>(i), (std::vector<int32_t>{1, -2, 300, 65504}));
}

}  // namespace
}  // namespace tern
