// Copy helpers for the view/copy family (view, permute, expand, cat, slice,
// select, squeeze, unsqueeze, clone, _to_copy).
//
// Format v1 has no aliasing: every view op copies into its own contiguous out
// tensor. These helpers move elements without knowing their dtype, only their
// size (1, 2, 4 or 8 bytes), plus an elementwise dtype conversion.
//
//   // out = self.permute(1, 0) for self [R, C]: read self as [C, R] with
//   // strides [1, C], write out contiguous.
//   StridedView v;
//   v.dim = 2;
//   v.sizes[0] = C; v.strides[0] = 1;
//   v.sizes[1] = R; v.strides[1] = C;
//   copy_strided(out.data, self.data, 4, v);
//
// Nothing here allocates; all functions are thread-safe on distinct outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// A source read through strides. Element (i_0, ..., i_{dim-1}) is at
// src[sum_k i_k * strides[k]] (in elements; a stride of 0 repeats the element,
// as expand does). The destination is contiguous, row-major over `sizes`.
struct StridedView {
  int dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// dst[i] = src[offset(i)] for every multi-index i of `view`, in row-major
// order. elem_size is 1, 2, 4 or 8. Dims that are contiguous in the source are
// merged first, so the innermost loop is one memcpy whenever the source's
// innermost run is contiguous, a fill when it is broadcast, and a tiled
// transpose when another dim is the contiguous one (e.g. NCHW -> NHWC).
void copy_strided(void* dst, const void* src, size_t elem_size, const StridedView& view);

// memcpy, skipped when dst == src (an in-place plan).
void copy_bytes(void* dst, const void* src, size_t n);

// Converts n elements from one dtype to another, between any two of the 10
// dtypes (float16/bfloat16 through float32, half.h). Semantics follow torch's
// .to(): floating -> integer truncates toward zero (int8/uint8/int16 through
// int64 then wrapping, as torch; int32/int64 saturating at their range and NaN -> 0,
// where torch's result is undefined); anything -> bool is
// value != 0; bool -> anything is 0 or 1.
using ConvertFn = void (*)(const void* src, void* dst, int64_t n);

// The conversion from `from` to `to`, or nullptr if either dtype is not
// supported. from == to is a plain copy.
ConvertFn select_convert(ScalarType from, ScalarType to);

// Reads a `ScalarType?` argument: None gives `fallback`; an Int must be a
// valid Tern ScalarType number. (Used by _to_copy, sum, mean, full, arange.)
Error parse_optional_dtype(PrepareContext& ctx, const EValue& v, const char* name,
                           ScalarType fallback, ScalarType* out);

// Gathers slices along one dim (index_select, index.Tensor): src is
// [outer, n, inner] elements of elem_size bytes, dst is [outer, count, inner]
// with count = index.numel, and dst[o, i, :] = src[o, index[i], :]. index is
// int64 or int32 (any shape, read flat); with `wrap`, an entry in [-n, 0)
// counts from the end. Returns -1, or the position in index of the first
// entry out of range (dst is then partly written).
int64_t gather_slices(void* dst, const void* src, size_t elem_size, int64_t outer, int64_t n,
                      int64_t inner, const Tensor& index, bool wrap);

// Writes slices along one dim, the inverse of a strided slice (slice_scatter,
// select_scatter): dst is [outer, n, inner] elements of dst_elem bytes, src
// is [outer, count, inner] elements of src_elem bytes, and
// dst[o, start + i * step, :] = convert(src[o, i, :]) for i < count. The
// caller checks that start + (count - 1) * step < n.
void scatter_slices(void* dst, size_t dst_elem, const void* src, size_t src_elem, ConvertFn convert,
                    int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t step,
                    int64_t count);

// Entry i of an int64 or int32 index tensor, as int64 (for error messages).
inline int64_t index_at(const Tensor& index, int64_t i) {
  return index.dtype == ScalarType::Int64 ? index.data_as<const int64_t>()[i]
                                          : index.data_as<const int32_t>()[i];
}

// Strides (in elements) that read t broadcast to a shape of `rank` dims
// (rank >= t.dim): t's dims line up with the last ones; 0 along new and
// size-1 dims, as aten::expand reads.
void broadcast_strides(const Tensor& t, int rank, int64_t* strides);

// Walks a multi-index over `sizes` in row-major order, keeping the matching
// offset under `strides` (in elements). For the outer loops of copies and
// reductions: after the last multi-index it wraps back to all zeros.
struct Odometer {
  int dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t index[kMaxDims] = {};
  int64_t offset = 0;

  void add(int64_t size, int64_t stride) {
    sizes[dim] = size;
    strides[dim] = stride;
    ++dim;
  }
  // Number of multi-indices (product of sizes; 1 when dim == 0).
  int64_t count() const {
    int64_t n = 1;
    for (int k = 0; k < dim; ++k) n *= sizes[k];
    return n;
  }
  void next() {
    for (int k = dim - 1; k >= 0; --k) {
      offset += strides[k];
      if (++index[k] < sizes[k]) return;
      offset -= strides[k] * sizes[k];
      index[k] = 0;
    }
  }
};

// The run function of ops whose out is a byte-for-byte copy of args[0] (view,
// squeeze, unsqueeze, clone, _to_copy without a dtype change); kOut is the
// index of the out tensor in args.
template <size_t kOut>
Error copy_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  copy_bytes(args[kOut]->tensor.data, self.data, self.nbytes());
  return Error::Ok;
}

// slice_scatter and select_scatter (args [self, src, ..., out at kOut]):
// out = self, then the `count` slices of out along `dim` from `start` by
// `step` = src converted to out's dtype. Prepare fills the state.
struct SliceScatterState {
  ConvertFn convert;  // src dtype -> self dtype
  int32_t dim;
  int64_t start, step, count;
};

// prepare for slice_scatter_run: args[1] (src) is a Tensor with `src_sizes`
// whose dtype converts to self's; out (args[i_out]) has self's dtype and
// sizes. Fills st->convert.
Error expect_slice_scatter(PrepareContext& ctx, Span<EValue* const> args, size_t i_out,
                           const int64_t* src_sizes, int src_dim, SliceScatterState* st);

template <size_t kOut>
Error slice_scatter_run(RunContext& ctx, EValue* const* args) {
  SliceScatterState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const Tensor& src = args[1]->tensor;
  Tensor& out = args[kOut]->tensor;
  copy_bytes(out.data, self.data, self.nbytes());
  const int64_t n = self.sizes[st.dim];
  const int64_t inner = self.stride(st.dim);
  const int64_t outer = n * inner == 0 ? 0 : self.numel / (n * inner);
  scatter_slices(out.data, scalar_type_size(out.dtype), src.data, scalar_type_size(src.dtype), st.convert,
                 outer, n, inner, st.start, st.step, st.count);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
