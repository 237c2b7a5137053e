#include "kernels/portable/util/advanced_index.h"

#include "kernels/portable/util/checks.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

// B, the broadcast shape of the index tensors (right-aligned). Returns false,
// with the two entries that clash, if they do not broadcast.
bool broadcast_indices(Span<Tensor* const> indices, int* rank, int64_t* sizes, int* a, int* b) {
  *rank = 0;
  for (const Tensor* t : indices) {
    if (t != nullptr && t->dim > *rank) *rank = t->dim;
  }
  int owner[kMaxDims];  // the entry that set sizes[d]
  for (int d = 0; d < *rank; ++d) {
    sizes[d] = 1;
    owner[d] = -1;
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    const Tensor* t = indices[i];
    if (t == nullptr) continue;
    for (int j = 0; j < t->dim; ++j) {
      const int d = *rank - t->dim + j;
      const int64_t s = t->sizes[j];
      if (s == 1 || s == sizes[d]) continue;
      if (sizes[d] != 1) {
        *a = owner[d];
        *b = static_cast<int>(i);
        return false;
      }
      sizes[d] = s;
      owner[d] = static_cast<int>(i);
    }
  }
  return true;
}

}  // namespace

Error index_plan_prepare(PrepareContext& ctx, const Tensor& self, Span<Tensor* const> indices,
                         IndexPlan* plan) {
  if (indices.size() > static_cast<size_t>(self.dim)) {
    return ctx.fail(Error::InvalidProgram, "indices has %zu entries for a %d-d self", indices.size(), self.dim);
  }
  int count = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    const Tensor* t = indices[i];
    if (t == nullptr) continue;
    ++count;
    if (t->dtype == ScalarType::Bool || t->dtype == ScalarType::UInt8) {
      return ctx.fail(Error::OperatorMissing,
                      "indices[%zu] is a boolean mask: not supported here (the result's shape depends on "
                      "how many entries are true)", i);
    }
    if (t->dtype != ScalarType::Int64 && t->dtype != ScalarType::Int32) return fail_dtype(ctx, "indices", t->dtype);
  }
  if (count == 0) return ctx.fail(Error::InvalidProgram, "indices has no index tensor");
  int rank = 0, a = 0, b = 0;
  int64_t sizes[kMaxDims];
  if (!broadcast_indices(indices, &rank, sizes, &a, &b)) {
    return ctx.fail(Error::InvalidProgram, "index tensors indices[%d] and indices[%d] do not broadcast", a, b);
  }
  if (self.dim - count + rank > kMaxDims) {
    return ctx.fail(Error::InvalidProgram, "the indexing result would have more than %d dims", kMaxDims);
  }
  index_plan_init(self, indices, plan);
  return Error::Ok;
}

void index_plan_init(const Tensor& self, Span<Tensor* const> indices, IndexPlan* plan) {
  IndexPlan& p = *plan;
  int64_t b_sizes[kMaxDims];
  int unused_a, unused_b;
  broadcast_indices(indices, &p.b_rank, b_sizes, &unused_a, &unused_b);
  p.count = 0;
  int first = -1, last = -1;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == nullptr) continue;
    if (first < 0) first = static_cast<int>(i);
    last = static_cast<int>(i);
    p.tensors[p.count] = indices[i];
    p.entry[p.count] = static_cast<int>(i);
    p.limit[p.count] = self.sizes[i];
    p.step[p.count] = self.stride(static_cast<int>(i));
    ++p.count;
  }
  const bool adjacent = last - first + 1 == p.count;
  p.rank = 0;
  auto add_self_dim = [&](int d) {
    p.sizes[p.rank] = self.sizes[d];
    p.self_strides[p.rank] = self.stride(d);
    for (int k = 0; k < p.count; ++k) p.tensor_strides[k][p.rank] = 0;
    ++p.rank;
  };
  auto add_b = [&]() {
    p.b_first = p.rank;
    for (int j = 0; j < p.b_rank; ++j, ++p.rank) {
      p.sizes[p.rank] = b_sizes[j];
      p.self_strides[p.rank] = 0;
      for (int k = 0; k < p.count; ++k) {
        const Tensor& t = *p.tensors[k];
        const int tj = j - (p.b_rank - t.dim);
        p.tensor_strides[k][p.rank] = tj < 0 || t.sizes[tj] == 1 ? 0 : t.stride(tj);
      }
    }
  };
  if (!adjacent) add_b();
  for (int d = 0; d < self.dim; ++d) {
    if (adjacent && d == first) add_b();
    const bool indexed = d < static_cast<int>(indices.size()) && indices[d] != nullptr;
    if (!indexed) add_self_dim(d);
  }
}

int index_plan_tail(const IndexPlan& plan, int64_t* elements) {
  int dims = 0;
  *elements = 1;
  for (int d = plan.rank - 1; d >= plan.b_first + plan.b_rank && plan.self_strides[d] == *elements; --d) {
    *elements *= plan.sizes[d];
    ++dims;
  }
  return dims;
}

void log_bad_index(const char* op, const IndexPlan& plan, const BadIndex& bad) {
  TERN_LOG_ERROR("%s: index %lld is out of bounds for dimension %d with size %lld (element %lld of that dim's "
                 "index tensor)", op, (long long)bad.value, plan.entry[bad.k], (long long)plan.limit[bad.k],
                 (long long)bad.position);
}

}  // namespace portable
}  // namespace tern
