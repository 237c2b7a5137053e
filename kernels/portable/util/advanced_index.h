// Advanced indexing with integer index tensors, NumPy/PyTorch rules: the
// element map shared by aten::index.Tensor (x[i, :, j]) and aten::index_put
// (x[i, :, j] = v).
//
// indices has one entry per leading dim of self (missing trailing entries
// are None): None takes the dim whole, an int64/int32 tensor indexes it. The
// index tensors broadcast together to a shape B, and the result (what
// index.Tensor returns, what index_put's values broadcast to) is
//   adjacent index tensors at dims p..q:   self.sizes[:p] + B + self.sizes[q+1:]
//   separated (a None between two):        B + the sizes of the other dims, in order
//   x [5, 6, 7, 8], a and b [3]:  x[:, a, b] -> [5, 3, 8]     x[a, :, b] -> [3, 6, 8]
// Result element (..., j, ...) is self's element at index_k[j] along each
// indexed dim k (negative entries count from the end) and at the result's own
// position along the other dims. The entries are data: run checks each one
// right before use, so an entry outside [-size, size) fails there
// (ExecutionFailed), even one an aliasing plan changes during the walk.
//
//   IndexPlan plan;
//   index_plan_init(self, indices, &plan);    // prepare checked the indices
//   BadIndex bad;
//   if (!index_plan_walk(plan, plan.rank, [&](int64_t self_offset) { ... }, &bad)) {
//     log_bad_index("aten::index.Tensor", plan, bad);
//     return Error::ExecutionFailed;
//   }
//
// Everything here is allocation-free; the plan is about 900 bytes, on the stack.
#pragma once

#include <cstdint>

#include "kernels/portable/util/copy.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

struct IndexPlan {
  int rank;                         // of the result
  int64_t sizes[kMaxDims];          // of the result
  int64_t self_strides[kMaxDims];   // per result dim: self's stride there, 0 on B's dims
  int b_first, b_rank;              // B's dims in the result: [b_first, b_first + b_rank)
  int count;                        // index tensors
  const Tensor* tensors[kMaxDims];  // in indices order
  int entry[kMaxDims];              // [k]: index k's position in indices (= the self dim it indexes)
  int64_t tensor_strides[kMaxDims][kMaxDims];  // [k][result dim]: index k's stride, 0 off B or broadcast
  int64_t limit[kMaxDims];          // [k]: size of the self dim that index k indexes
  int64_t step[kMaxDims];           // [k]: self's stride along that dim
};

// prepare: indices (args[i], an OptionalTensorList) has at most self.dim
// entries, among them at least one index tensor; index tensors are int64 or
// int32 (bool masks: OperatorMissing, the caller handles the cases it can)
// and broadcast together; the result has at most kMaxDims dims. Fills plan.
Error index_plan_prepare(PrepareContext& ctx, const Tensor& self, Span<Tensor* const> indices,
                         IndexPlan* plan);

// run: the plan of indices that index_plan_prepare accepted.
void index_plan_init(const Tensor& self, Span<Tensor* const> indices, IndexPlan* plan);

// Trailing result dims folded into one block by index_plan_walk's callers:
// the longest run of last dims, none of B, that is contiguous in self (a
// block of elements there is one contiguous run in self and in the result).
// Returns how many dims; *elements is the block size.
int index_plan_tail(const IndexPlan& plan, int64_t* elements);

// An index entry out of range: index tensor k, flat position, its value.
struct BadIndex {
  int k;
  int64_t position, value;
};

// Calls f(self_offset) for each position of the first `dims` result dims,
// in row-major order: self_offset is the self element at that position (the
// later dims at 0). Returns false at the first entry out of range (*bad
// says which), true when done.
template <typename F>
bool index_plan_walk(const IndexPlan& p, int dims, const F& f, BadIndex* bad) {
  int64_t n = 1;
  for (int d = 0; d < dims; ++d) n *= p.sizes[d];
  int64_t pos[kMaxDims] = {}, at[kMaxDims] = {};  // position in the result; in each index tensor
  int64_t base = 0;                               // self offset along the non-indexed dims
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = base;
    for (int k = 0; k < p.count; ++k) {
      const int64_t v = index_at(*p.tensors[k], at[k]);
      const int64_t j = v < 0 ? v + p.limit[k] : v;
      if (j < 0 || j >= p.limit[k]) {
        *bad = {k, at[k], v};
        return false;
      }
      offset += j * p.step[k];
    }
    f(offset);
    for (int d = dims - 1; d >= 0; --d) {
      base += p.self_strides[d];
      for (int k = 0; k < p.count; ++k) at[k] += p.tensor_strides[k][d];
      if (++pos[d] < p.sizes[d]) break;
      base -= p.self_strides[d] * p.sizes[d];
      for (int k = 0; k < p.count; ++k) at[k] -= p.tensor_strides[k][d] * p.sizes[d];
      pos[d] = 0;
    }
  }
  return true;
}

// Logs "<op>: index <value> at position <i> of indices[<entry>] is out of
// range for size <n>".
void log_bad_index(const char* op, const IndexPlan& plan, const BadIndex& bad);

}  // namespace portable
}  // namespace tern
