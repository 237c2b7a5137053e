// Reference helpers of the elementwise kernel tests (kernels_arithmetic_test,
// kernels_activation_test, kernels_compare_test): numpy broadcasting by
// division (the slow obvious way), reproducible inputs, and the tolerance the
// kernels promise. Expected values come from these and from hand computation,
// never from the kernels.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/cpp/compare.h"

namespace tern {
namespace test {
namespace elementwise {

inline int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// Flat index into an input of sizes `in` for flat index i of the broadcast
// out of sizes `out` (numpy rules, by division: the slow obvious way).
inline int64_t broadcast_index(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                               int64_t i) {
  int64_t idx = 0, stride = 1;
  const size_t off = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = i % out[d];
    i /= out[d];
    if (d < off) continue;
    const int64_t s = in[d - off];
    if (s != 1) idx += coord * stride;
    stride *= s;
  }
  return idx;
}

// Deterministic pseudo-random values in [lo, hi) (a linear congruential
// generator; random_util.h's random_floats draws other values).
inline std::vector<float> random_floats(int64_t n, float lo, float hi, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = lo + (hi - lo) * static_cast<float>(x >> 8) / static_cast<float>(1 << 24);
  }
  return v;
}

// Each element within 1e-4 * (max |want| + |want[i]|) (tests/cpp/compare.h).
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want) {
  EXPECT_TRUE(test::all_close(got, want, 1e-4));
}

}  // namespace elementwise
}  // namespace test
}  // namespace tern
