// The p-norm distance between two rows, shared by aten::_cdist_forward and
// aten::_pdist_forward, as ATen's Dist (cpu/DistanceOpsKernel.cpp):
//
//   p = 0    number of coordinates that differ
//   p = 1    sum |a - b|
//   p = 2    sqrt(sum (a - b)^2)
//   p = inf  max |a - b|
//   other    (sum |a - b|^p)^(1 / p)
//
// summed in the rows' type, in coordinate order. NaN propagates, except
// that ATen's cdist drops a NaN from its inf-norm max (std::max keeps the
// running value) while pdist's vectorized max keeps it: `nan_max` picks.
#pragma once

#include <cmath>
#include <cstdint>

namespace tern {
namespace portable {

enum class NormKind : int32_t { Zero, One, Two, Inf, General };

inline NormKind norm_kind(double p) {
  return p == 0 ? NormKind::Zero : p == 1 ? NormKind::One : p == 2 ? NormKind::Two
         : std::isinf(p) ? NormKind::Inf : NormKind::General;
}

template <typename T>
T row_distance(const T* a, const T* b, int64_t m, NormKind kind, T p, bool nan_max) {
  T agg = 0;
  switch (kind) {
    case NormKind::Zero:
      for (int64_t k = 0; k < m; ++k) {
        const T d = a[k] - b[k];
        agg += std::isnan(d) ? d : T(d != 0);
      }
      return agg;
    case NormKind::One:
      for (int64_t k = 0; k < m; ++k) agg += std::fabs(a[k] - b[k]);
      return agg;
    case NormKind::Two:
      for (int64_t k = 0; k < m; ++k) agg += (a[k] - b[k]) * (a[k] - b[k]);
      return std::sqrt(agg);
    case NormKind::Inf:
      for (int64_t k = 0; k < m; ++k) {
        const T d = std::fabs(a[k] - b[k]);
        if (d > agg || (nan_max && std::isnan(d))) agg = d;
        if (std::isnan(agg)) break;
      }
      return agg;
    case NormKind::General:
      for (int64_t k = 0; k < m; ++k) agg += std::pow(std::fabs(a[k] - b[k]), p);
      return static_cast<T>(std::pow(static_cast<double>(agg), 1.0 / static_cast<double>(p)));
  }
  return agg;
}

}  // namespace portable
}  // namespace tern
