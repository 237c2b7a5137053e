// aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor
// args: [self, indices, values, accumulate, out]   (indices: an OptionalTensorList)
//
// The functional form of x[..., idx, ...] = values and x.index_copy_(dim,
// idx, values), with ONE integer index tensor at position k of indices (as
// aten::index.Tensor takes): out = self, then for every position (a, i, b)
// of the indexed shape [self dims before k, idx dims, self dims after k]
// out[a, idx[i], b] = values[a, i, b] (values broadcast to the indexed
// shape), or += with accumulate (repeated indices add up, in index order).
// Any dtype; values has self's dtype (as torch requires); idx int64 or
// int32, negative entries count from the end; an entry outside [-size, size)
// fails at run (ExecutionFailed). Several index tensors and boolean masks are
// OperatorMissing at load.
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

struct IndexPutState {
  int32_t k;  // position of the index tensor in indices
};

// The indexed shape (see the file comment) and values' element strides along
// it (0 where values is broadcast), and the [outer, n, inner] split of self.
struct IndexedShape {
  int rank;
  int64_t sizes[kMaxDims];
  int64_t value_strides[kMaxDims];
  int64_t outer, n, inner, count;
};

void indexed_shape(const Tensor& self, const Tensor& index, const Tensor& values, int k, IndexedShape* s) {
  s->rank = 0;
  s->outer = s->inner = 1;
  s->n = self.sizes[k];
  s->count = index.numel;
  for (int d = 0; d < self.dim; ++d) {
    if (d == k) {
      for (int j = 0; j < index.dim; ++j) s->sizes[s->rank++] = index.sizes[j];
      continue;
    }
    s->sizes[s->rank++] = self.sizes[d];
    (d < k ? s->outer : s->inner) *= self.sizes[d];
  }
  int64_t stride = 1;
  for (int d = s->rank - 1, v = values.dim - 1; d >= 0; --d, --v) {
    const int64_t size = v >= 0 ? values.sizes[v] : 1;
    s->value_strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

template <typename T>
Error index_put_run(RunContext& ctx, EValue* const* args) {
  IndexPutState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = *args[1]->tensors[st.k];
  const Tensor& values = args[2]->tensor;
  const bool accumulate = args[3]->b;
  Tensor& out = args[4]->tensor;
  copy_bytes(out.data, self.data, self.nbytes());
  IndexedShape s;
  indexed_shape(self, index, values, st.k, &s);
  const int64_t total = s.outer * s.count * s.inner;
  if (total == 0) return Error::Ok;
  T* dst = out.data_as<T>();
  const T* src = values.data_as<const T>();
  int64_t pos[kMaxDims] = {};
  int64_t voff = 0, a = 0, i = 0, b = 0;
  for (int64_t e = 0; e < total; ++e) {
    int64_t j = index_at(index, i);
    if (j < 0) j += s.n;
    if (j < 0 || j >= s.n) {
      TERN_LOG_ERROR("aten::index_put: index %lld at position %lld is out of range for size %lld",
                     (long long)index_at(index, i), (long long)i, (long long)s.n);
      return Error::ExecutionFailed;
    }
    T& d = dst[(a * s.n + j) * s.inner + b];
    if constexpr (std::is_same_v<T, bool>) {
      d = accumulate ? (d || src[voff]) : src[voff];
    } else {
      d = accumulate ? static_cast<T>(d + src[voff]) : src[voff];
    }
    // Next position: (a, i, b) and the odometer over the indexed shape.
    if (++b == s.inner) {
      b = 0;
      if (++i == s.count) i = 0, ++a;
    }
    for (int d2 = s.rank - 1; d2 >= 0; --d2) {
      voff += s.value_strides[d2];
      if (++pos[d2] < s.sizes[d2]) break;
      voff -= s.value_strides[d2] * s.sizes[d2];
      pos[d2] = 0;
    }
  }
  return Error::Ok;
}

struct IndexPut {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    return index_put_run<T>(ctx, args);
  }
};

}  // namespace

Error index_put_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::OptionalTensorList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& self = args[0]->tensor;
  const Tensor& values = args[2]->tensor;
  Span<Tensor* const> indices = args[1]->tensors;
  if (indices.empty() || indices.size() > static_cast<size_t>(self.dim)) {
    return ctx.fail(Error::InvalidProgram, "indices has %zu entries for a %d-d self", indices.size(), self.dim);
  }
  IndexPutState st{-1};
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == nullptr) continue;
    if (st.k >= 0) return ctx.fail(Error::OperatorMissing, "only one index tensor is supported");
    st.k = static_cast<int32_t>(i);
  }
  if (st.k < 0) return ctx.fail(Error::InvalidProgram, "indices has no index tensor");
  const Tensor& index = *indices[st.k];
  if (index.dtype == ScalarType::Bool || index.dtype == ScalarType::UInt8) {
    return ctx.fail(Error::OperatorMissing, "boolean mask indices are not supported");
  }
  if (index.dtype != ScalarType::Int64 && index.dtype != ScalarType::Int32) return fail_dtype(ctx, "indices", index.dtype);
  if (self.dim - 1 + index.dim > kMaxDims) {
    return ctx.fail(Error::InvalidProgram, "the indexed shape would have more than %d dims", kMaxDims);
  }
  if (values.dtype != self.dtype) {
    return ctx.fail(Error::InvalidProgram, "values is %s, self is %s: index_put needs the same dtype",
                    scalar_type_name(values.dtype), scalar_type_name(self.dtype));
  }
  // values must broadcast to the indexed shape.
  IndexedShape s;
  if (values.dim > self.dim - 1 + index.dim) {
    return ctx.fail(Error::InvalidProgram, "values has %d dims, more than the indexed shape's %d", values.dim,
                    self.dim - 1 + index.dim);
  }
  indexed_shape(self, index, values, st.k, &s);
  for (int d = s.rank - 1, v = values.dim - 1; v >= 0; --d, --v) {
    if (values.sizes[v] != 1 && values.sizes[v] != s.sizes[d]) {
      return ctx.fail(Error::InvalidProgram, "values size %lld in dim %d does not broadcast to %lld",
                      (long long)values.sizes[v], v, (long long)s.sizes[d]);
    }
  }
  TERN_CHECK_OK(expect_same_shape(ctx, args[4]->tensor, self, "out", "self"));
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "out", self.dtype));
  RunFn run = select_all<IndexPut>(self.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  memcpy(ctx.state(), &st, sizeof(st));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
