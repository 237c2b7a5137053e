// Checks shared by the portable kernels' prepare functions. Each logs what
// was expected and what was found, naming the argument.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// "unsupported dtype <t> for <what>".
Error fail_dtype(PrepareContext& ctx, const char* what, ScalarType t);

// a and b have the same dtype and sizes.
Error expect_same_shape(PrepareContext& ctx, const Tensor& a, const Tensor& b, const char* a_name,
                        const char* b_name);

// t has exactly `sizes` (dim entries).
Error expect_sizes(PrepareContext& ctx, const Tensor& t, const char* name, const int64_t* sizes,
                   int dim);

// t has dtype `dtype`.
Error expect_dtype(PrepareContext& ctx, const Tensor& t, const char* name, ScalarType dtype);

// Normalizes a possibly negative dim against `rank`; fails if out of range.
Error normalize_dim(PrepareContext& ctx, int64_t d, int rank, const char* name, int* out);

// A Python slice start:end:step over `size` elements, as torch takes it
// (aten::slice, aten::slice_scatter): start and end are Int or None,
// negative counts from the end, out of range is clamped; step must be
// positive. Gives the first element (in [0, size]) and the element count,
// and sets *step to 1 when the count is 0 or 1 (the step is then never
// taken: a huge one would only overflow stride * step). Afterwards
// *step < size whenever count > 1, so stride * step stays within the tensor.
Error slice_bounds(PrepareContext& ctx, const EValue& start, const EValue& end, int64_t* step,
                   int64_t size, int64_t* first, int64_t* count);

// output_mask of the gradient ops that return three results
// (aten::native_layer_norm_backward, native_group_norm_backward,
// convolution_backward): a bool[3] saying which ones to compute. A result
// left out is None in ATen; its out is then an empty placeholder tensor that
// the kernel does not touch (python/tern/emit.py).
Error read_output_mask(PrepareContext& ctx, const EValue& v, bool mask[3]);

}  // namespace portable
}  // namespace tern
