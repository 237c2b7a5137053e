// Numpy-style broadcasting for the elementwise kernels (add, sub, mul, div,
// eq, where, ...).
//
// Sizes are matched from the right; a size-1 (or missing) dim of an input is
// repeated along the out's dim. prepare checks the shapes with
// expect_broadcast; run iterates with a BroadcastPlan:
//
//   BroadcastPlan p;
//   broadcast_plan_init(&p, out, inputs, 2);
//   broadcast_for_each_row(p, [&](int64_t out_offset, const int64_t* in_offsets, int64_t n) {
//     // out[out_offset + j] from input k at in_offsets[k] + j * p.inner_stride(k),
//     // j in [0, n); inner_stride is 1 (contiguous) or 0 (one repeated element)
//   });
//
// The plan drops size-1 dims and merges neighbouring dims along which every
// input is either contiguous or broadcast, so the common cases collapse to a
// few long rows and need no index arithmetic per element:
//   same shape          [N, C] + [N, C]  -> 1 row of N*C, strides (1, 1)
//   scalar / 0-d input  [N, C] + []      -> 1 row of N*C, strides (1, 0)
//   row vector          [N, C] + [C]     -> N rows of C,  strides (1, 1), other restarts each row
//   column              [N, C] + [N, 1]  -> N rows of C,  strides (1, 0)
// Other shapes walk the outer dims with an odometer (additions only).
//
// The plan (about 260 bytes) is built on the stack at each run from the
// tensors' sizes: too big for PrepareContext::state(), and O(rank) to build.
#pragma once

#include <cstdint>

#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {

constexpr int kMaxBroadcastInputs = 3;

struct BroadcastPlan {
  int dim;         // merged rank, >= 1
  int num_inputs;  // <= kMaxBroadcastInputs
  int64_t numel;   // of out
  int64_t sizes[kMaxDims];
  // strides[k][d]: elements of input k between steps of merged dim d (0 if broadcast)
  int64_t strides[kMaxBroadcastInputs][kMaxDims];

  int64_t inner_stride(int k) const { return strides[k][dim - 1]; }
};

// prepare: the n inputs broadcast together to exactly `out`'s sizes. `names`
// are the schema's argument names, for the log.
Error expect_broadcast(PrepareContext& ctx, const ElemInput* inputs, const char* const* names,
                       int n, const Tensor& out);

// prepare for a binary op with args [self, other, ..., out] (out last, at
// num_args - 1): self and other are Tensors of supported dtypes, or Scalars
// (torch.export leaves literals such as the 2 in `x + 2` in Tensor slots);
// with scalar_other (the .Scalar overloads) self must be a Tensor and other
// a Scalar. They must broadcast to out. *common = torch.result_type(self, other).
Error prepare_binary(PrepareContext& ctx, Span<EValue* const> args, size_t num_args,
                     bool scalar_other, ScalarType* common);

// Inputs must broadcast to `out` (prepare checked). n <= kMaxBroadcastInputs.
void broadcast_plan_init(BroadcastPlan* p, const Tensor& out, const ElemInput* inputs, int n);

// Calls fn(out_offset, in_offsets, n) for each innermost row of out in order.
template <typename Fn>
void broadcast_for_each_row(const BroadcastPlan& p, Fn&& fn) {
  if (p.numel == 0) return;
  const int outer = p.dim - 1;
  const int64_t n = p.sizes[outer];
  const int64_t rows = p.numel / n;
  int64_t idx[kMaxDims] = {};
  int64_t off[kMaxBroadcastInputs] = {};
  for (int64_t r = 0; r < rows; ++r) {
    fn(r * n, static_cast<const int64_t*>(off), n);
    for (int d = outer - 1; d >= 0; --d) {  // odometer over the outer dims
      if (++idx[d] < p.sizes[d]) {
        for (int k = 0; k < p.num_inputs; ++k) off[k] += p.strides[k][d];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < p.num_inputs; ++k) off[k] -= p.strides[k][d] * (p.sizes[d] - 1);
    }
  }
}

namespace detail {

template <typename T, typename R, typename Op>
inline void binary_chunk(const ElemChunk<T>& a, const ElemChunk<T>& b, R* out, int64_t n,
                         const Op& op) {
  if (!a.scalar && !b.scalar) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a.p[j], b.p[j]);
  } else if (!a.scalar) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a.p[j], b.s);
  } else if (!b.scalar) {
    for (int64_t j = 0; j < n; ++j) out[j] = op(a.s, b.p[j]);
  } else {
    const R v = op(a.s, b.s);
    for (int64_t j = 0; j < n; ++j) out[j] = v;
  }
}

}  // namespace detail

// out[i] = op(a[i'], b[i'']) over out's elements, with a and b broadcast and
// read as T; out is an array of R (T for arithmetic, bool for comparisons).
template <typename T, typename R, typename Op>
void broadcast_binary(const Tensor& out, const ElemInput& a, const ElemInput& b, const Op& op) {
  const ElemInput inputs[2] = {a, b};
  BroadcastPlan p;
  broadcast_plan_init(&p, out, inputs, 2);
  R* o = out.data_as<R>();
  const int64_t sa = p.inner_stride(0), sb = p.inner_stride(1);
  T buf_a[kElemChunk], buf_b[kElemChunk];
  broadcast_for_each_row(p, [&](int64_t out_off, const int64_t* off, int64_t n) {
    for (int64_t j = 0; j < n; j += kElemChunk) {
      const int64_t m = n - j < kElemChunk ? n - j : kElemChunk;
      ElemChunk<T> ca = elem_chunk(a, off[0] + j * sa, sa, m, buf_a);
      ElemChunk<T> cb = elem_chunk(b, off[1] + j * sb, sb, m, buf_b);
      detail::binary_chunk(ca, cb, o + out_off + j, m, op);
    }
  });
}

// out[i] = op(c[i'], a[i''], b[i''']) with all three broadcast; c read as C,
// a and b as T, out is an array of R (e.g. where: C = bool, R = T).
template <typename C, typename T, typename R, typename Op>
void broadcast_ternary(const Tensor& out, const ElemInput& c, const ElemInput& a,
                       const ElemInput& b, const Op& op) {
  const ElemInput inputs[3] = {c, a, b};
  BroadcastPlan p;
  broadcast_plan_init(&p, out, inputs, 3);
  R* o = out.data_as<R>();
  const int64_t sc = p.inner_stride(0), sa = p.inner_stride(1), sb = p.inner_stride(2);
  C buf_c[kElemChunk];
  T buf_a[kElemChunk], buf_b[kElemChunk];
  broadcast_for_each_row(p, [&](int64_t out_off, const int64_t* off, int64_t n) {
    for (int64_t j = 0; j < n; j += kElemChunk) {
      const int64_t m = n - j < kElemChunk ? n - j : kElemChunk;
      const C* pc = elem_chunk_array(c, off[0] + j * sc, sc, m, buf_c);
      const T* pa = elem_chunk_array(a, off[1] + j * sa, sa, m, buf_a);
      const T* pb = elem_chunk_array(b, off[2] + j * sb, sb, m, buf_b);
      R* po = o + out_off + j;
      for (int64_t i = 0; i < m; ++i) po[i] = op(pc[i], pa[i], pb[i]);
    }
  });
}

}  // namespace portable
}  // namespace tern
