// Tests of the portable quantize kernels (op_quantize.cpp) at the edges of
// the float -> integer conversion: inputs beyond the quantized range,
// infinities and NaN, for every quantized dtype, through quantize_per_tensor
// and its .tensor overload. Where eager's result is defined (an in-range
// clamp) it is the expected value; where it is not (float(INT32_MAX) is 2^31,
// outside int32; NaN) the kernel saturates and maps NaN to 0 (op_quantize.cpp,
// to_quantized). Under UBSan (make test-sanitize) an out-of-range conversion
// is also a report. And choose_qparams.tensor's quant range, checked at load.
// tests/python/test_quantize.py compares the kernels with eager itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// x quantized with scale 1 and zero point 0 to dtype Q over [qmin, qmax],
// by quantize_per_tensor or, with `tensor_params`, its .tensor overload.
template <typename Q>
std::vector<Q> quantize(const std::vector<float>& x, int64_t qmin, int64_t qmax, bool tensor_params) {
  KernelHarness h;
  EValue* in = h.tensor<float>({static_cast<int64_t>(x.size())}, x);
  EValue* out = h.empty<Q>({static_cast<int64_t>(x.size())});
  EValue* dtype = h.i(static_cast<int64_t>(ScalarTypeOf<Q>::value));
  Error e;
  if (tensor_params) {
    e = h.call("quantized_decomposed::quantize_per_tensor.tensor",
               {in, h.tensor<double>({1}, {1.0}), h.tensor<int64_t>({1}, {0}), h.i(qmin), h.i(qmax), dtype, out});
  } else {
    e = h.call("quantized_decomposed::quantize_per_tensor", {in, h.d(1.0), h.i(0), h.i(qmin), h.i(qmax), dtype, out});
  }
  EXPECT_EQ(e, Error::Ok);
  return h.values<Q>(out);
}

class QuantizeEdges : public ::testing::TestWithParam<bool> {};  // param: the .tensor overload

TEST_P(QuantizeEdges, test_int32_beyond_its_range_saturates_and_nan_is_zero) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  // 2147483647.f is 2^31: as large an input as 1e10 once clamped in float32
  const std::vector<float> x = {1e10f, 3e9f, 2147483647.f, 2147483520.f, kInf, -1e10f, -kInf, -2147483648.f,
                                kNaN,  0.5f, 1.5f,         -2.5f,        7.f};
  const std::vector<int32_t> want = {kMax, kMax, kMax, 2147483520, kMax, kMin, kMin, kMin, 0, 0, 2, -2, 7};
  EXPECT_EQ(quantize<int32_t>(x, kMin, kMax, GetParam()), want);
}

TEST_P(QuantizeEdges, test_int32_narrow_range_clamps_to_it) {
  const std::vector<float> x = {1e10f, -1e10f, kInf, -kInf, kNaN, 99.5f, -100.5f, 3.f};
  const std::vector<int32_t> want = {100, -100, 100, -100, 0, 100, -100, 3};
  EXPECT_EQ(quantize<int32_t>(x, -100, 100, GetParam()), want);
}

TEST_P(QuantizeEdges, test_8_and_16_bit_dtypes_clamp_and_nan_is_zero) {
  const std::vector<float> x = {1e10f, -1e10f, kInf, -kInf, kNaN, 2.5f};
  EXPECT_EQ(quantize<int8_t>(x, -128, 127, GetParam()), (std::vector<int8_t>{127, -128, 127, -128, 0, 2}));
  EXPECT_EQ(quantize<uint8_t>(x, 0, 255, GetParam()), (std::vector<uint8_t>{255, 0, 255, 0, 0, 2}));
  EXPECT_EQ(quantize<int16_t>(x, -32768, 32767, GetParam()),
            (std::vector<int16_t>{32767, -32768, 32767, -32768, 0, 2}));
}

INSTANTIATE_TEST_SUITE_P(Overloads, QuantizeEdges, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "tensor" : "scalar"; });

// choose_qparams.tensor divides the input's range by quant_max - quant_min:
// as eager, a range without 0 or of one value is refused at load.
TEST(ChooseQparams, test_a_quant_range_without_zero_or_of_one_value_is_refused) {
  for (auto [qmin, qmax, ok] : {std::tuple{-128, 127, true}, {0, 255, true}, {0, 0, false}, {5, 10, false},
                                {-10, -5, false}}) {
    KernelHarness h;
    std::string why;
    const Error e = h.prepare_only("quantized_decomposed::choose_qparams.tensor",
                                   {h.tensor<float>({3}, {1, -2, 3}), h.i(qmin), h.i(qmax), h.d(1e-5),
                                    h.i(static_cast<int64_t>(ScalarType::Int16)), h.empty<double>({1}),
                                    h.empty<int64_t>({1})},
                                   &why);
    EXPECT_EQ(e, ok ? Error::Ok : Error::InvalidProgram) << qmin << ", " << qmax << ": " << why;
    if (!ok) {
      EXPECT_NE(why.find("must hold 0"), std::string::npos) << why;
    }
  }
}

}  // namespace
}  // namespace tern
