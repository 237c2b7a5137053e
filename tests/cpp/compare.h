// The one way the C++ tests compare computed floating-point values with an
// oracle (a reference computed in double, recorded outputs, ...): every other
// test file calls all_close() instead of accumulating an error itself
// (tests/python/test_cpp_compare_lint.py enforces it).
//
// Why one helper: `err = std::max(err, fabs(got - want))` ignores a NaN
// (std::max(err, NaN) is err), `err > tol` is false for a NaN, and a bound
// floored at max(1, |want|) lets outputs far below 1 be anything of their size.
// all_close() checks each element on its own:
//
//   want NaN        got must be NaN
//   want +inf/-inf  got must be the same infinity
//   want finite     got must be finite and |got - want| <= atol + rtol * |want|
//
// atol < 0 (the default) means rtol times the oracle's own largest finite
// magnitude (the error a computation of that size may make in its small
// elements), not floored at 1: an oracle of values near 1e-3 gets a bound
// near rtol * 1e-3. atol = 0 makes the bound purely relative per element.
//
// On failure the message names how many elements failed and the worst one
// (a NaN or infinity where the oracle has none counts as worst), with its
// index, both values, the difference and the bound; `what` prefixes it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace tern {
namespace test {

namespace compare_detail {

inline std::string num(double v) {
  char buf[48];
  snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace compare_detail

// The largest finite magnitude among want[0, n) (0 if none).
template <typename W>
double max_finite_magnitude(const W* want, size_t n) {
  double scale = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = static_cast<double>(want[i]);
    if (std::isfinite(w) && std::fabs(w) > scale) scale = std::fabs(w);
  }
  return scale;
}

template <typename W>
double max_finite_magnitude(const std::vector<W>& want) {
  return max_finite_magnitude(want.data(), want.size());
}

template <typename G, typename W>
::testing::AssertionResult all_close(const G* got, const W* want, size_t n, double rtol, double atol = -1,
                                     const std::string& what = "") {
  if (atol < 0) atol = rtol * max_finite_magnitude(want, n);
  size_t failed = 0, worst = 0;
  double worst_excess = -1;  // how far past its bound the worst element is; +inf: not a number where one was due
  std::string worst_why;
  for (size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    double excess;
    const char* why = nullptr;
    if (std::isnan(w)) {
      if (std::isnan(g)) continue;
      excess = INFINITY, why = "want NaN";
    } else if (std::isinf(w)) {
      if (g == w) continue;
      excess = INFINITY, why = "want an infinity";
    } else if (!std::isfinite(g)) {
      excess = INFINITY, why = std::isnan(g) ? "got NaN" : "got an infinity";
    } else {
      const double bound = atol + rtol * std::fabs(w), d = std::fabs(g - w);
      if (d <= bound) continue;
      excess = d - bound;
    }
    ++failed;
    if (excess > worst_excess) {
      worst_excess = excess, worst = i;
      worst_why = why ? why : "";
    }
  }
  if (failed == 0) return ::testing::AssertionSuccess();
  const double g = static_cast<double>(got[worst]), w = static_cast<double>(want[worst]);
  const double bound = atol + rtol * (std::isfinite(w) ? std::fabs(w) : 0.0);
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  if (!what.empty()) r << what << ": ";
  r << failed << " of " << n << " elements not close (rtol " << compare_detail::num(rtol) << ", atol "
    << compare_detail::num(atol) << "); worst at " << worst << ": got " << compare_detail::num(g) << ", want "
    << compare_detail::num(w);
  if (!worst_why.empty()) {
    r << " (" << worst_why << ")";
  } else {
    r << " (|diff| " << compare_detail::num(std::fabs(g - w)) << " > bound " << compare_detail::num(bound) << ")";
  }
  return r;
}

template <typename G, typename W>
::testing::AssertionResult all_close(const std::vector<G>& got, const std::vector<W>& want, double rtol,
                                     double atol = -1, const std::string& what = "") {
  if (got.size() != want.size()) {
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    if (!what.empty()) r << what << ": ";
    return r << "got " << got.size() << " elements, want " << want.size();
  }
  return all_close(got.data(), want.data(), got.size(), rtol, atol, what);
}

}  // namespace test
}  // namespace tern
