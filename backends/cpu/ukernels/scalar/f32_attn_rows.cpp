// f32_attn_{dots,wsum}_ukernel__scalar: ukernels/common/f32_attn_rows.h,
// vectorized by the compiler for this file's ISA.
#include "backends/cpu/ukernels/common/f32_attn_rows.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

void f32_attn_dots_ukernel__scalar(size_t g, size_t n, size_t e, const float* q, size_t q_stride, const float* k,
                                 size_t k_stride, float scale, float* s, size_t s_stride) {
  attn_rows::dots(g, n, e, q, q_stride, k, k_stride, scale, s, s_stride);
}

void f32_attn_wsum_ukernel__scalar(size_t g, size_t n, size_t ev, const float* p, size_t p_stride, const float* v,
                                 size_t v_stride, float* y, size_t y_stride) {
  attn_rows::wsum(g, n, ev, p, p_stride, v, v_stride, y, y_stride);
}

}  // namespace cpu
}  // namespace tern
