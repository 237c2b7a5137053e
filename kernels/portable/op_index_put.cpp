// aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor
// args: [self, indices, values, accumulate, out]   (indices: an OptionalTensorList)
//
// The functional form of x[indices] = values (and x.index_copy_, x[i] += v
// with accumulate): out = self, then each element of the indexing result
// x[indices] (its shape and element map: util/advanced_index.h; index
// tensors int64 or int32, broadcast together, negative entries count from
// the end) is set to values broadcast to that shape, or has it added with
// accumulate. Elements are written in row-major order of the result, so
// repeated positions end with the last value or add up in that order.
//
// One boolean mask as the only index tensor (x[mask] = v, x[:, mask] = v)
// is supported too, since out keeps self's shape: the mask covers the self
// dims from its position on (sizes equal), and the result has one dim for
// its true entries, in row-major order. values may have that dim of size 1
// (or lack it); any other size must equal the number of true entries, which
// is data, so a mismatch fails at run (ExecutionFailed). A 0-d mask, or a
// mask with other index tensors, is OperatorMissing.
//
// Any dtype; values has self's dtype (as torch requires); integers wrap on
// overflow, bool accumulates as logical or. An index entry outside
// [-size, size) fails at run (ExecutionFailed).
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/advanced_index.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
T put(T old, T value, bool accumulate) {
  return accumulate ? static_cast<T>(wrap_add(old, value)) : value;
}

template <typename T>
Error index_put_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const Tensor& values = args[2]->tensor;
  const bool accumulate = args[3]->b;
  Tensor& out = args[4]->tensor;
  copy_bytes(out.data, self.data, self.nbytes());
  IndexPlan plan;
  index_plan_init(self, args[1]->tensors, &plan);
  Odometer at_value;  // values broadcast to the result
  int64_t strides[kMaxDims];
  broadcast_strides(values, plan.rank, strides);
  for (int d = 0; d < plan.rank; ++d) at_value.add(plan.sizes[d], strides[d]);
  T* dst = out.data_as<T>();
  const T* src = values.data_as<const T>();
  BadIndex bad;
  const bool ok = index_plan_walk(plan, plan.rank, [&](int64_t offset) {
    dst[offset] = put(dst[offset], src[at_value.offset], accumulate);
    at_value.next();
  }, &bad);
  if (ok) return Error::Ok;
  log_bad_index("aten::index_put", plan, bad);
  return Error::ExecutionFailed;
}

// The mask case (see the file comment): self as [outer dims, M mask
// elements, inner elements]; the result is [outer dims, true entries, inner
// dims], with values broadcast to it.
struct MaskShape {
  int pos, rank;   // the mask's position in indices; the result's rank
  int64_t count;   // true entries: the result's dim `pos`
  int64_t inner;   // self elements after the mask's dims
  int64_t value_size, value_stride;  // values along the true-entries dim (1 and 0 when broadcast)
};

MaskShape mask_shape(const Tensor& self, const Tensor& mask, const Tensor& values, int pos) {
  MaskShape s;
  s.pos = pos;
  s.rank = self.dim - mask.dim + 1;
  s.count = 0;
  const auto* m = static_cast<const uint8_t*>(mask.data);  // bool as bytes: nonzero is true
  for (int64_t i = 0; i < mask.numel; ++i) s.count += m[i] != 0;
  s.inner = 1;
  for (int d = pos + mask.dim; d < self.dim; ++d) s.inner *= self.sizes[d];
  const int v = values.dim - (s.rank - pos);  // values' dim on the true-entries dim
  s.value_size = v >= 0 ? values.sizes[v] : 1;
  s.value_stride = s.value_size == 1 ? 0 : values.stride(v);
  return s;
}

template <typename T>
Error index_put_mask_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const Tensor& values = args[2]->tensor;
  const bool accumulate = args[3]->b;
  Tensor& out = args[4]->tensor;
  copy_bytes(out.data, self.data, self.nbytes());
  int pos = 0;
  while (args[1]->tensors[pos] == nullptr) ++pos;
  const Tensor& mask = *args[1]->tensors[pos];
  const MaskShape s = mask_shape(self, mask, values, pos);
  if (s.value_size != 1 && s.value_size != s.count) {
    TERN_LOG_ERROR("aten::index_put: values has %lld entries along the mask's dim, the mask %lld true entries",
                   (long long)s.value_size, (long long)s.count);
    return Error::ExecutionFailed;
  }
  int64_t strides[kMaxDims];
  broadcast_strides(values, s.rank, strides);
  Odometer outer_self, outer_value, inner_value;
  for (int d = 0; d < pos; ++d) {
    outer_self.add(self.sizes[d], self.stride(d));
    outer_value.add(self.sizes[d], strides[d]);
  }
  for (int d = pos + 1; d < s.rank; ++d) inner_value.add(self.sizes[d - s.rank + self.dim], strides[d]);
  const auto* m = static_cast<const uint8_t*>(mask.data);
  T* dst = out.data_as<T>();
  const T* src = values.data_as<const T>();
  const int64_t outer = outer_self.count();
  for (int64_t o = 0; o < outer; ++o, outer_self.next(), outer_value.next()) {
    int64_t j = 0;  // true entries so far
    for (int64_t e = 0; e < mask.numel; ++e) {
      if (m[e] == 0) continue;
      if (s.value_size != 1 && j == s.value_size) {  // the mask changed while written (an aliasing plan)
        TERN_LOG_ERROR("aten::index_put: the mask changed during the write");
        return Error::ExecutionFailed;
      }
      T* d = dst + outer_self.offset + e * s.inner;
      const T* v = src + outer_value.offset + j++ * s.value_stride;
      for (int64_t i = 0; i < s.inner; ++i, inner_value.next()) d[i] = put(d[i], v[inner_value.offset], accumulate);
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

struct IndexPutMask {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    return index_put_mask_run<T>(ctx, args);
  }
};

// values broadcasts to the result shape (`sizes`, rank dims); dim `free`
// (the mask's true entries, or -1) takes any size.
Error expect_values(PrepareContext& ctx, const Tensor& values, const int64_t* sizes, int rank, int free) {
  if (values.dim > rank) {
    return ctx.fail(Error::InvalidProgram, "values has %d dims, more than the indexing result's %d", values.dim, rank);
  }
  for (int d = rank - 1, v = values.dim - 1; v >= 0; --d, --v) {
    if (d != free && values.sizes[v] != 1 && values.sizes[v] != sizes[d]) {
      return ctx.fail(Error::InvalidProgram, "values size %lld in dim %d does not broadcast to %lld",
                      (long long)values.sizes[v], v, (long long)sizes[d]);
    }
  }
  return Error::Ok;
}

// The one boolean mask of indices, if any: its position, or -1. Fails
// (OperatorMissing) on a mask with other index tensors or a 0-d mask, and on
// a mask whose sizes are not self's (InvalidProgram, as torch).
Error find_mask(PrepareContext& ctx, const Tensor& self, Span<Tensor* const> indices, int* pos) {
  *pos = -1;
  int tensors = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] == nullptr) continue;
    ++tensors;
    if (indices[i]->dtype == ScalarType::Bool) *pos = static_cast<int>(i);
  }
  if (*pos < 0) return Error::Ok;
  const Tensor& mask = *indices[*pos];
  if (tensors > 1 || mask.dim == 0) {
    return ctx.fail(Error::OperatorMissing, "a boolean mask index is supported alone and with 1 dim or more");
  }
  // the entries after the mask index the self dims after the mask's dims
  bool same = static_cast<int>(indices.size()) - 1 + mask.dim <= self.dim;
  for (int d = 0; same && d < mask.dim; ++d) same = mask.sizes[d] == self.sizes[*pos + d];
  if (!same) return ctx.fail(Error::InvalidProgram, "the mask's sizes must match self's from dim %d", *pos);
  return Error::Ok;
}

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
  if (values.dtype != self.dtype) {
    return ctx.fail(Error::InvalidProgram, "values is %s, self is %s: index_put needs the same dtype",
                    scalar_type_name(values.dtype), scalar_type_name(self.dtype));
  }
  TERN_CHECK_OK(expect_same_shape(ctx, args[4]->tensor, self, "out", "self"));
  int mask = -1;
  TERN_CHECK_OK(find_mask(ctx, self, indices, &mask));
  RunFn run = nullptr;
  if (mask >= 0) {
    const int mask_dims = indices[mask]->dim;
    int64_t sizes[kMaxDims];  // the result's, with 0 for the true entries
    int rank = 0;
    for (int d = 0; d < self.dim; ++d) {
      if (d == mask) sizes[rank++] = 0;
      if (d < mask || d >= mask + mask_dims) sizes[rank++] = self.sizes[d];
    }
    TERN_CHECK_OK(expect_values(ctx, values, sizes, rank, mask));
    run = select_all<IndexPutMask>(self.dtype);
  } else {
    IndexPlan plan;
    TERN_CHECK_OK(index_plan_prepare(ctx, self, indices, &plan));
    TERN_CHECK_OK(expect_values(ctx, values, plan.sizes, plan.rank, -1));
    run = select_all<IndexPut>(self.dtype);
  }
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
