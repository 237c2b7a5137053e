// Reductions over one row of floats for the cpu backend's row ops (layer
// norm, softmax: ops/elementwise.cpp), in kLanes interleaved partial results: each
// lane is its own chain, so the compiler vectorizes the loop for the ISA it
// builds for without reassociating (a single running sum is one dependent
// add per element, which it must leave scalar).
#pragma once

#include <cstdint>

namespace tern {
namespace cpu {

constexpr int kLanes = 16;

// sum of f(v[i]) for i < n
template <typename F>
inline float row_sum(const float* v, int64_t n, F f) {
  float part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] += f(v[i + l]);
  }
  float s = 0.f;
  for (; i < n; ++i) s += f(v[i]);
  for (int l = 0; l < kLanes; ++l) s += part[l];
  return s;
}

// max of v[i] for i < n (-inf for n == 0; NaN if any is NaN, as torch)
inline float row_max(const float* v, int64_t n) {
  float part[kLanes];
  for (int l = 0; l < kLanes; ++l) part[l] = -__builtin_inff();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] = (v[i + l] > part[l] || v[i + l] != v[i + l]) ? v[i + l] : part[l];
  }
  float m = -__builtin_inff();
  for (; i < n; ++i) m = (v[i] > m || v[i] != v[i]) ? v[i] : m;
  for (int l = 0; l < kLanes; ++l) m = (part[l] > m || part[l] != part[l]) ? part[l] : m;
  return m;
}

}  // namespace cpu
}  // namespace tern
