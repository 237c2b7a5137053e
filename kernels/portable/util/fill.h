// Filling an out tensor with one ATen Scalar, converted at load: the
// creation kernels (full, full_like, fill.Scalar, scalar_tensor).
//
//   // aten::fill.Scalar(Tensor self, Scalar value): args [self, value, out]
//   return prepare_fill(ctx, *args[1], self.dtype, 2);
//
// The value is converted to the out dtype as torch converts it: checked for
// overflow (300 does not fit uint8; -1 wraps to 255 as torch allows; 1e40
// does not fit float32), a double truncated toward zero for an integer
// dtype, != 0 for bool. run then only stores it numel times.
#pragma once

#include <cstddef>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// prepare: value is a Scalar (Int, Double or Bool) that fits dtype; keeps its
// bytes in dtype and the out index in ctx.state() and sets a run that fills
// args[out] (whose sizes and dtype the caller checked).
Error prepare_fill(PrepareContext& ctx, const EValue& value, ScalarType dtype, size_t out);

}  // namespace portable
}  // namespace tern
