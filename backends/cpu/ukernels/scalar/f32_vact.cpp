// f32_vact_ukernel__scalar: sigmoid, tanh, gelu and silu over arrays
// (ukernels/common/f32_vact.h), vectorized by the compiler for this file's ISA.
#include "backends/cpu/ukernels/common/f32_vact.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

void f32_vact_ukernel__scalar(int kind, float* v, size_t n) { vact::apply(kind, v, n); }

}  // namespace cpu
}  // namespace tern
