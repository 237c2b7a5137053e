// 2-d pooling geometry shared by max_pool2d_with_indices and avg_pool2d.
//
// Inputs are [c, h, w] or [n, c, h, w]; every (n, c) plane is pooled alone,
// so the kernels see `planes` = n * c planes of [h, w] -> [oh, ow].
// Output sizes follow ATen's pooling_output_shape (ceil_mode included: the
// last window must start inside the input or its left padding).
#pragma once

#include <cstdint>

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

// Checks `self` (float32, 3-d or 4-d, non-empty planes) and the window
// arguments as ATen's pool2d_shape_check does, fills g (count_include_pad and
// divisor zeroed) and checks that `out` has the pooled sizes.
Error pool_prepare_geometry(PrepareContext& ctx, const Tensor& self, const PoolArgs& a,
                            const Tensor& out, PoolGeometry* g);

}  // namespace portable
}  // namespace tern
