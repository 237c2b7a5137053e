// tests/cpp/compare.h: all_close() fails where a test should (a NaN, an
// infinity, a wrong small value, one wrong element among large ones) and
// passes what is close.
#include "tests/cpp/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tern {
namespace test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::string message(const ::testing::AssertionResult& r) { return r.message(); }

TEST(Compare, test_close_values_pass) {
  const std::vector<double> want = {1.0, -2.0, 3.5, 0.0, 1e-3};
  const std::vector<float> got = {1.00001f, -2.00001f, 3.50002f, 1e-5f, 1e-3f};
  EXPECT_TRUE(all_close(got, want, 1e-4));
  EXPECT_TRUE(all_close(got.data(), want.data(), got.size(), 1e-4));
  const std::vector<double> exact = {1.0, -2.0, 3.5, 0.0, 0.125};
  EXPECT_TRUE(all_close(std::vector<float>{1.0f, -2.0f, 3.5f, 0.0f, 0.125f}, exact, 0, 0));
  EXPECT_FALSE(all_close(std::vector<float>{1.0f, -2.0f, 3.5f, 0.0f, 0.125001f}, exact, 0, 0));
}

TEST(Compare, test_nan_where_the_oracle_has_a_number_fails) {
  const std::vector<double> want = {1.0, 2.0, 3.0, 4.0};
  const std::vector<float> got = {1.0f, kNaN, 3.0f, 4.0f};
  const ::testing::AssertionResult r = all_close(got, want, 1e-3);
  EXPECT_FALSE(r);
  EXPECT_NE(message(r).find("worst at 1"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("got NaN"), std::string::npos) << message(r);
  // A NaN among large errors is still the worst.
  EXPECT_NE(message(all_close(std::vector<float>{100.0f, kNaN, 3.0f, 4.0f}, want, 1e-3)).find("worst at 1"),
            std::string::npos);
}

TEST(Compare, test_infinities_where_the_oracle_has_a_number_fail) {
  const std::vector<double> want = {1.0, 2.0, 3.0};
  EXPECT_FALSE(all_close(std::vector<float>{1.0f, 2.0f, kInf}, want, 1e-3));
  EXPECT_FALSE(all_close(std::vector<float>{-kInf, 2.0f, 3.0f}, want, 1e-3));
  EXPECT_TRUE(all_close(std::vector<float>{1.0f, 2.0f, 3.0f}, want, 1e-3));  // control
}

TEST(Compare, test_oracle_nan_and_infinities_must_be_matched) {
  const std::vector<double> want = {double(kNaN), double(kInf), -double(kInf), 1.0};
  EXPECT_TRUE(all_close(std::vector<float>{kNaN, kInf, -kInf, 1.0f}, want, 1e-5));
  EXPECT_FALSE(all_close(std::vector<float>{0.0f, kInf, -kInf, 1.0f}, want, 1e-5));   // NaN due
  EXPECT_FALSE(all_close(std::vector<float>{kNaN, -kInf, -kInf, 1.0f}, want, 1e-5));  // the other infinity
  EXPECT_FALSE(all_close(std::vector<float>{kNaN, 3e38f, -kInf, 1.0f}, want, 1e-5));  // finite for inf
  EXPECT_FALSE(all_close(std::vector<float>{kNaN, kNaN, -kInf, 1.0f}, want, 1e-5));   // NaN for inf
  // The oracle's infinities do not make the default atol infinite.
  EXPECT_FALSE(all_close(std::vector<float>{kNaN, kInf, -kInf, 2.0f}, want, 1e-5));
}

// Outputs far below 1: a zero in place of 1e-6 is wrong, whatever a bound
// floored at 1 would say.
TEST(Compare, test_a_zero_for_a_small_value_fails) {
  const std::vector<double> want = {1e-6, 2e-6, -3e-6};
  const ::testing::AssertionResult r = all_close(std::vector<float>{1e-6f, 0.0f, -3e-6f}, want, 1e-4);
  EXPECT_FALSE(r);
  EXPECT_NE(message(r).find("worst at 1"), std::string::npos) << message(r);
  EXPECT_TRUE(all_close(std::vector<float>{1e-6f, 2e-6f, -3e-6f}, want, 1e-4));  // control
}

// With atol = 0 each element is held to its own relative bound: a small
// element wrong by 100% among large ones fails, though the error is tiny
// next to the largest value.
TEST(Compare, test_a_wrong_element_among_large_ones_fails_with_atol_zero) {
  const std::vector<double> want = {1e6, -2e6, 0.5, 3e6};
  const std::vector<float> got = {1e6f, -2e6f, 1.0f, 3e6f};
  const ::testing::AssertionResult r = all_close(got, want, 1e-5, 0);
  EXPECT_FALSE(r);
  EXPECT_NE(message(r).find("worst at 2"), std::string::npos) << message(r);
  EXPECT_TRUE(all_close(got, want, 1e-5));  // control: the default atol is 1e-5 * 3e6 = 30
  EXPECT_TRUE(all_close(std::vector<float>{1e6f, -2e6f, 0.5f, 3e6f}, want, 1e-5, 0));  // control
}

TEST(Compare, test_sizes_must_match) {
  EXPECT_FALSE(all_close(std::vector<float>{1.0f}, std::vector<double>{1.0, 2.0}, 1e-3));
}

TEST(Compare, test_message_names_what) {
  const ::testing::AssertionResult r = all_close(std::vector<float>{2.0f}, std::vector<double>{1.0}, 1e-3, -1,
                                                 "output 3");
  EXPECT_FALSE(r);
  EXPECT_EQ(message(r).rfind("output 3: 1 of 1 elements not close", 0), 0u) << message(r);
}

}  // namespace
}  // namespace test
}  // namespace tern
