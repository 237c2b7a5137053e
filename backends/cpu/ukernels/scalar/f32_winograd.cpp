// f32_winograd_in_ukernel_4x4__scalar and f32_winograd_out_ukernel_2x2__scalar:
// Winograd F(2x2, 3x3) transforms (ukernels/common/f32_winograd.h), vectorized
// by the compiler for this file's ISA.
#include "backends/cpu/ukernels/common/f32_winograd.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

void f32_winograd_in_ukernel_4x4__scalar(const float* const* in, size_t c, float* v, size_t stride) {
  winograd::input(in, c, v, stride);
}

void f32_winograd_out_ukernel_2x2__scalar(const float* m, size_t stride, size_t oc, const float* bias,
                                          float* const* out, const float* const* res, MinMax clamp) {
  winograd::output(m, stride, oc, bias, out, res, clamp);
}

}  // namespace cpu
}  // namespace tern
