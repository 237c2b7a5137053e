// Reproducible test inputs: n floats uniform in [lo, hi) from a seed.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace tern {
namespace test {

inline std::vector<float> random_floats(size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

}  // namespace test
}  // namespace tern
