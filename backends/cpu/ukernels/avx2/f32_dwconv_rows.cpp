// f32_dwconv_rows_ukernel__avx2: depthwise convolution of a row's interior
// pixels (ukernels/common/f32_dwconv_rows.h), vectorized by the compiler for
// this file's ISA.
#include "backends/cpu/ukernels/common/f32_dwconv_rows.h"

namespace tern {
namespace cpu {

void f32_dwconv_rows_ukernel__avx2(size_t channels, size_t pixels, size_t kh, size_t kw, size_t ki0, size_t ki1,
                                  const float* const* rows, size_t step, size_t dil, const float* w, float* out,
                                  size_t out_stride, MinMax clamp) {
  dwrows::run(channels, pixels, kh, kw, ki0, ki1, rows, step, dil, w, out, out_stride, clamp);
}

}  // namespace cpu
}  // namespace tern
