// f32_pool_ukernel__avx2: max and average pooling (ukernels/common/f32_pool.h),
// vectorized by the compiler for this file's ISA.
#include "backends/cpu/ukernels/common/f32_pool.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

void f32_pool_ukernel__avx2(size_t c, size_t pixels, size_t taps, const float* const* in, const float* scale,
                            float* out, size_t out_stride) {
  pool::apply(c, pixels, taps, in, scale, out, out_stride);
}

}  // namespace cpu
}  // namespace tern
