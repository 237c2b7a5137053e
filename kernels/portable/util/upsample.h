// 2-d resizing geometry shared by upsample_nearest2d.vec and
// upsample_bilinear2d.vec, following ATen (aten/src/ATen/native/UpSample.h).
//
// Inputs are [n, c, h, w]; every (n, c) plane is resized alone, [h, w] ->
// [oh, ow]. The out size is output_size when given, else
// floor(size * scale_factor) per dim (exactly one of the two is given, as
// F.interpolate emits: scale_factor=2 -> (input, None, [2.0, 2.0])).
//
// Source coordinates use a per-dim step, as ATen's area_pixel_compute_scale:
//   align_corners:  (h - 1) / (oh - 1)   (0 when oh == 1)
//   otherwise:      1 / scale_factor when one was given, else h / oh
// so a scale factor that does not divide evenly (1.7 on 5 rows -> 8 rows)
// samples with 1 / 1.7, not 5 / 8, exactly like PyTorch. ATen computes the
// step in the op's math type (float for float32); rounding this function's
// double result to float gives the same value (one division of exact values).
#pragma once

#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

struct UpsampleGeometry {
  int64_t planes;          // n * c
  int64_t h, w;            // input plane
  int64_t oh, ow;          // output plane
  double scale_h, scale_w;  // the given scale factors, or 0 when output_size was given
};

// Checks input (4-d, non-empty planes), output_size (None or 2 positive ints),
// scale_factors (None or 2 positive finite floats; exactly one of the two is
// None) and out (input's dtype, [n, c, oh, ow]); fills g.
Error upsample2d_prepare_geometry(PrepareContext& ctx, const Tensor& input,
                                  const EValue& output_size, const EValue& scale_factors,
                                  const Tensor& out, UpsampleGeometry* g);

// ATen's area_pixel_compute_scale: the step in input coordinates per output
// index along one dim (see the header comment). `scale` <= 0 means none given.
double upsample_step(int64_t in, int64_t out, bool align_corners, double scale);

}  // namespace portable
}  // namespace tern
