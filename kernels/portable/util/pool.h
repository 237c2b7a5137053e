// Pooling geometry shared by max_pool2d_with_indices and avg_pool2d (2-d),
// max_pool3d_with_indices and avg_pool3d (3-d).
//
// Inputs are [c, h, w] or [n, c, h, w]; every (n, c) plane is pooled alone,
// so the kernels see `planes` = n * c planes of [h, w] -> [oh, ow].
// Output sizes follow ATen's pooling_output_shape (ceil_mode included: the
// last window must start inside the input or its left padding).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/elementwise.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// Fits in PrepareContext::state(); validated by pool_prepare_geometry.
struct PoolGeometry {
  int64_t planes;      // n * c
  int32_t h, w;        // input plane
  int32_t oh, ow;      // output plane
  int32_t kh, kw;      // window
  int32_t sh, sw;      // stride
  int32_t ph, pw;      // implicit padding, each side
  int32_t dh, dw;      // dilation (1 for avg_pool2d)
  int32_t count_include_pad;  // avg_pool2d: padding counts in the divisor
  int32_t divisor;            // avg_pool2d: divisor_override, 0 if None
};
static_assert(sizeof(PoolGeometry) <= PrepareContext::kStateBytes,
              "PoolGeometry must fit in state");

// The arguments that shape a pooling window. dilation may be nullptr (1).
struct PoolArgs {
  const EValue* kernel_size;
  const EValue* stride;  // an empty list means stride = kernel_size
  const EValue* padding;
  const EValue* dilation;
  bool ceil_mode;
};

// ATen's pooling_output_shape: the number of windows along one dimension.
int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode);

// Checks `self` (3-d or 4-d, non-empty planes; the dtype is the op's to
// check) and the window arguments as ATen's pool2d_shape_check does, fills g
// (count_include_pad and divisor zeroed) and checks that `out` has the
// pooled sizes.
Error pool_prepare_geometry(PrepareContext& ctx, const Tensor& self, const PoolArgs& a,
                            const Tensor& out, PoolGeometry* g);

// The input rows [start, end) that output row o of `out` averages when
// adaptive pooling maps `in` rows to `out` (ATen's start_index / end_index).
inline int64_t adaptive_window_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
inline int64_t adaptive_window_end(int64_t o, int64_t out, int64_t in) { return ((o + 1) * in + out - 1) / out; }

// The input window of avg_pool2d's output (oh, ow), clipped to the input
// (empty when it lies in the padding), and the divisor ATen's CPU kernel
// uses: divisor_override, else the window clipped to the padded input
// (count_include_pad) or to the input. Shared by avg_pool2d and its gradient.
struct AvgWindow {
  int64_t h0, h1, w0, w1;  // [h0, h1) x [w0, w1)
  int64_t divisor;
  bool empty() const { return h0 >= h1 || w0 >= w1; }
};
inline AvgWindow avg_window_2d(const PoolGeometry& g, int64_t oh, int64_t ow) {
  const int64_t ph0 = oh * g.sh - g.ph, pw0 = ow * g.sw - g.pw;
  const int64_t ph1 = ph0 + g.kh < int64_t(g.h) + g.ph ? ph0 + g.kh : int64_t(g.h) + g.ph;
  const int64_t pw1 = pw0 + g.kw < int64_t(g.w) + g.pw ? pw0 + g.kw : int64_t(g.w) + g.pw;
  AvgWindow a{ph0 > 0 ? ph0 : 0, ph1 < g.h ? ph1 : g.h, pw0 > 0 ? pw0 : 0, pw1 < g.w ? pw1 : g.w, 0};
  a.divisor = g.divisor != 0 ? g.divisor : g.count_include_pad ? (ph1 - ph0) * (pw1 - pw0) : (a.h1 - a.h0) * (a.w1 - a.w0);
  return a;
}

// avg_pool2d/3d's divisor_override: None gives 0, else a non-zero int32.
Error read_divisor_override(PrepareContext& ctx, const EValue& v, int32_t* divisor);

// ---------------------------------------------------------------------------
// Dtypes. The 16-bit float types never reach these: the pooling kernels stage
// them through float32 (half_stage.h).

// The dtypes of ATen's CPU max pooling: float32, float64 and the integer
// types (not bool). K::run<T> is the run function for elements of type T.
template <typename K>
RunFn select_max_pool_run(ScalarType t) {
  if (t == ScalarType::Float32) return K::template run<float>;
  if (t == ScalarType::Float64) return K::template run<double>;
  return select_integer<K>(t);
}

// Where a max over a window starts: -inf, or the lowest integer.
template <typename T>
T max_pool_start() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                              : std::numeric_limits<T>::lowest();
}

// Whether v replaces the window's max so far: NaN always does (the last NaN
// of a window wins), ties do not (the first maximum keeps its index), as in
// ATen's CPU kernels.
template <typename T>
bool max_pool_takes(T v, T best) {
  if constexpr (std::is_floating_point<T>::value) {
    return v > best || std::isnan(v);
  } else {
    return v > best;
  }
}

// The dtypes of ATen's CPU avg pooling: float32, float64 and int64.
template <typename K>
RunFn select_avg_pool_run(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return K::template run<float>;
    case ScalarType::Float64: return K::template run<double>;
    case ScalarType::Int64: return K::template run<int64_t>;
    default: return nullptr;
  }
}

// What avg pooling sums a window of T in: double for the floats; for int64,
// uint64_t, so a sum past the range wraps as eager's int64 sum does, without
// signed overflow.
template <typename T>
using AvgPoolAcc = std::conditional_t<std::is_integral<T>::value, uint64_t, double>;

// A window's sum divided by its divisor, as eager's `scalar_t(sum / divisor)`:
// int64 truncates toward zero (INT64_MIN / -1 wraps instead of trapping).
template <typename T>
T avg_pool_divide(AvgPoolAcc<T> sum, int64_t divisor) {
  if constexpr (std::is_integral<T>::value) {
    if (divisor == -1) return static_cast<T>(AvgPoolAcc<T>(0) - sum);
    return static_cast<T>(static_cast<int64_t>(sum) / divisor);
  } else {
    return static_cast<T>(sum / static_cast<double>(divisor));
  }
}

// ---------------------------------------------------------------------------
// 3-d pooling: self [c, d, h, w] or [n, c, d, h, w]; every (n, c) volume is
// pooled alone. The window (56 bytes) goes in state; the sizes, which do
// not fit beside it, are read back from self and out at run (pool3d_sizes).
struct Pool3dWindow {
  int32_t k[3], s[3], p[3], dil[3];  // kernel, stride, padding, dilation as (d, h, w)
  int32_t count_include_pad;         // avg_pool3d: padding counts in the divisor
  int32_t divisor;                   // avg_pool3d: divisor_override, 0 if None
};
static_assert(sizeof(Pool3dWindow) <= PrepareContext::kStateBytes,
              "Pool3dWindow must fit in state");

struct Pool3dSizes {
  int64_t volumes;  // n * c
  int64_t in[3];    // (d, h, w) of self
  int64_t out[3];   // (od, oh, ow)
};
Pool3dSizes pool3d_sizes(const Tensor& self, const Tensor& out);

// Calls fn(volume, o, i0) for every output element: volume is the index of
// its (n, c) volume, o its flat index in out, i0[3] the input (d, h, w) of
// its window's first corner (negative inside the padding). The threads
// split the output rows.
template <typename Fn>
void pool3d_for_each_window(RunContext& ctx, const Pool3dWindow& g, const Pool3dSizes& z,
                            const Fn& fn) {
  const int64_t rows = z.volumes * z.out[0] * z.out[1];  // a row: ow outputs
  ctx.parallel_for(rows, 64, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t oh = r % z.out[1], od = (r / z.out[1]) % z.out[0];
      const int64_t volume = r / (z.out[1] * z.out[0]);
      for (int64_t ow = 0; ow < z.out[2]; ++ow) {
        const int64_t i0[3] = {od * g.s[0] - g.p[0], oh * g.s[1] - g.p[1], ow * g.s[2] - g.p[2]};
        fn(volume, r * z.out[2] + ow, i0);
      }
    }
  });
}

// Checks self (4-d or 5-d; only the batch may be empty; the dtype is the
// op's to check) and the window arguments as ATen's pool3d_shape_check does,
// fills w (count_include_pad and divisor zeroed) and checks that `out` has
// the pooled sizes.
Error pool3d_prepare_window(PrepareContext& ctx, const Tensor& self, const PoolArgs& a,
                            const Tensor& out, Pool3dWindow* w);

}  // namespace portable
}  // namespace tern
