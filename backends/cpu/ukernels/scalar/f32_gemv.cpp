// f32_igemm_ukernel_1x64__scalar: one output row, up to 4 panels
// (ukernels/common/f32_gemv.h), vectorized by the compiler for this file's ISA.
#include "backends/cpu/ukernels/common/f32_gemv.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

void f32_igemm_ukernel_1x64__scalar(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* a, const float* w,
                                    size_t panel_floats, float* c, size_t c_stride, const float* res,
                                    MinMax clamp) {
  gemv::row(mr, nc, kc, ks, a, w, panel_floats, c, c_stride, res, clamp);
}

}  // namespace cpu
}  // namespace tern
