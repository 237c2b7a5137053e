// Helpers of the gather/scatter family (aten::gather, aten::scatter.src,
// aten::scatter.value, aten::scatter_add, aten::scatter_reduce.two): an index
// tensor with self's rank picks, along one dim, the element of self that each
// of its entries reads (gather) or writes (scatter):
//
//   gather   out[i][j][k] = self[i][index[i][j][k]][k]          (dim = 1)
//   scatter  out[i][index[i][j][k]][k] = src[i][j][k]           (out = self first)
//
// index has self's rank (a 0-d tensor counts as 1-d with one element) and,
// on every dim but `dim`, is no larger than self; for scatter, no larger than
// src on every dim. An empty index may have any shape and integer dtype, as
// in torch. Entries must lie in [0, self.size(dim)): negative entries
// do not wrap, as in torch. They are data, so run checks each one right
// before use and fails with ExecutionFailed.
//
//   // out = self.scatter_add(1, index, src), T the dtype:
//   const int64_t bad = for_each_scatter_entry(self, 1, index, &src,
//       [&](int64_t at, int64_t from, int64_t) { out[at] += src_data[from]; });
//   if (bad >= 0) { log index_at(index, bad); return Error::ExecutionFailed; }
//
// Entries are visited in row-major order of index, so duplicates combine in
// index order (the last write wins for scatter).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// prepare: args[i_dim] is an Int (normalized against self into *dim),
// args[i_index] an int64/int32 Tensor with self's rank and sizes no larger
// than self's but along dim, and no larger than *src's anywhere (src may be
// nullptr).
Error expect_scatter_index(PrepareContext& ctx, Span<EValue* const> args, size_t i_dim,
                           size_t i_index, const Tensor* src, int* dim);

// prepare of the scatter ops, args [self, dim, index, src or value, ..., out
// at i_out]: the checks above, src (when has_src) a Tensor of self's dtype,
// out a Tensor of self's dtype and sizes.
Error expect_scatter(PrepareContext& ctx, Span<EValue* const> args, bool has_src, size_t i_out,
                     int* dim);

// Calls f(self_offset, src_offset, position) for each entry of index, in
// order: self_offset is the element of self (or of an out shaped like it)
// that the entry selects, src_offset the element of src at the entry's
// position (0 when src is nullptr), position the entry's flat position in
// index. Returns -1, or the position of the first entry out of range (the
// entries before it were visited).
template <typename F>
int64_t for_each_scatter_entry(const Tensor& self, int dim, const Tensor& index, const Tensor* src,
                               const F& f) {
  Odometer at_self, at_src;
  for (int k = 0; k < index.dim; ++k) {
    at_self.add(index.sizes[k], k == dim ? 0 : self.stride(k));
    at_src.add(index.sizes[k], src != nullptr ? src->stride(k) : 0);
  }
  const int64_t n = self.dim == 0 ? 1 : self.sizes[dim];
  const int64_t step = self.dim == 0 ? 0 : self.stride(dim);
  for (int64_t i = 0; i < index.numel; ++i, at_self.next(), at_src.next()) {
    const int64_t j = index_at(index, i);
    if (j < 0 || j >= n) return i;
    f(at_self.offset + j * step, at_src.offset, i);
  }
  return -1;
}

// Logs "<op>: index <value> at position <i> is out of range for dim <dim>
// of size <n>" and returns ExecutionFailed (for run, after a bad entry).
Error fail_scatter_index(const char* op, const Tensor& self, int dim, const Tensor& index,
                         int64_t position);

// The sum and product reductions of the scatter ops: integers wrap on
// overflow, bool adds as logical or and multiplies as logical and.
template <typename T>
T scatter_sum(T a, T b) {
  return static_cast<T>(wrap_add(a, b));
}
template <typename T>
T scatter_prod(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else {
    return static_cast<T>(wrap_mul(a, b));
  }
}

// out[at] = combine(out[at], src[from]) for each entry of index, in order,
// where out has self's shape (T: the dtype of out and src). Returns -1, or
// the position of the first entry out of range.
template <typename T, typename Combine>
int64_t scatter_combine(const Tensor& self, int dim, const Tensor& index, const Tensor& src, T* out,
                        const Combine& combine) {
  const T* s = src.data_as<const T>();
  return for_each_scatter_entry(self, dim, index, &src, [&](int64_t at, int64_t from, int64_t) {
    out[at] = combine(out[at], s[from]);
  });
}

}  // namespace portable
}  // namespace tern
