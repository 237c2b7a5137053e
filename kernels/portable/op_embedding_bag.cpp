// aten::_embedding_bag(Tensor weight, Tensor indices, Tensor offsets,
//     bool scale_grad_by_freq=False, int mode=0, bool sparse=False,
//     Tensor? per_sample_weights=None, bool include_last_offset=False,
//     int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)
// aten::_embedding_bag_forward_only(same arguments) -> (same)
// args: [weight, indices, offsets, scale_grad_by_freq, mode, sparse,
//        per_sample_weights, include_last_offset, padding_idx,
//        out, offset2bag, bag_size, max_indices]
//
// nn.EmbeddingBag / F.embedding_bag (torch.export emits the _forward_only
// variant when no gradient is needed, which is the case in export).
// weight [v, d] float32 or float64; indices and offsets 1-d, int32 or int64.
// Bag b holds indices[offsets[b] : offsets[b + 1]] (the last bag runs to
// the end; with include_last_offset, offsets has one entry more than there
// are bags and must end with indices.numel). out [bags, d] per mode:
//   0 sum   sum of the rows (times per_sample_weights[i] if given)
//   1 mean  sum / count
//   2 max   elementwise max (a later row wins only when greater)
// Rows whose index equals padding_idx (when >= 0) are skipped and not
// counted; an empty bag gives zeros.
//
// The other three outs only feed the backward pass; they get the sizes
// torch's meta function gives (offsets' dtype) and the values of ATen's CPU
// kernel where those sizes agree with it: offset2bag[i] = bag of index i
// (empty in sum mode on the float32 fast path), bag_size[b] = count (0 in
// sum mode), max_indices[b, j] = the row that won (max mode) or bag_size
// (mean) or 0 (sum).
//
// Offsets that do not start at 0, decrease or end past indices.numel, and
// indices outside [0, v), fail at run (ExecutionFailed): they are data.
#include <cstring>
#include <initializer_list>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/half_stage.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

enum BagMode { kSum = 0, kMean = 1, kMax = 2 };

struct BagState {
  int64_t padding_idx;  // < 0: none
  int32_t mode;
  int32_t include_last_offset;
};

void store_index(const Tensor& t, int64_t i, int64_t v) {
  if (t.dtype == ScalarType::Int64) {
    t.data_as<int64_t>()[i] = v;
  } else {
    t.data_as<int32_t>()[i] = static_cast<int32_t>(v);
  }
}

// The bag boundaries and the indices are data: checked at every run.
bool check_bags(const Tensor& indices, const Tensor& offsets, int64_t rows, bool include_last) {
  const int64_t n = indices.numel, m = offsets.numel;
  for (int64_t b = 0; b < m; ++b) {
    const int64_t o = index_at(offsets, b), prev = b == 0 ? 0 : index_at(offsets, b - 1);
    if (o < prev || o > n || (b == 0 && o != 0) || (include_last && b == m - 1 && o != n)) {
      TERN_LOG_ERROR("embedding_bag: offsets[%lld] = %lld; offsets must start at 0, not "
                     "decrease and end at most at %lld (exactly there with include_last_offset)",
                     (long long)b, (long long)o, (long long)n);
      return false;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = index_at(indices, i);
    if (r < 0 || r >= rows) {
      TERN_LOG_ERROR("embedding_bag: index %lld at position %lld is out of range [0, %lld)",
                     (long long)r, (long long)i, (long long)rows);
      return false;
    }
  }
  return true;
}

// Bag b = indices [begin, end): its out row, and its count (rows not skipped).
template <typename T>
int64_t reduce_bag(const BagState& st, EValue* const* args, int64_t b, int64_t begin, int64_t end) {
  const Tensor& weight = args[0]->tensor;
  const Tensor& indices = args[1]->tensor;
  const Tensor& max_indices = args[12]->tensor;
  const int64_t d = weight.sizes[1];
  const T* psw = args[6]->is_tensor() ? args[6]->tensor.data_as<const T>() : nullptr;
  T* out = args[9]->tensor.data_as<T>() + b * d;
  memset(out, 0, static_cast<size_t>(d) * sizeof(T));
  int64_t count = 0;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t r = index_at(indices, i);
    if (r == st.padding_idx) continue;
    const T* row = weight.data_as<const T>() + r * d;
    if (st.mode == kMax) {
      for (int64_t j = 0; j < d; ++j) {
        if (count == 0 || row[j] > out[j]) {
          out[j] = row[j];
          store_index(max_indices, b * d + j, r);
        }
      }
    } else {
      const T s = psw ? psw[i] : T(1);
      for (int64_t j = 0; j < d; ++j) out[j] += psw ? s * row[j] : row[j];
    }
    ++count;
  }
  if (st.mode == kMean && count > 0) {
    for (int64_t j = 0; j < d; ++j) out[j] /= static_cast<T>(count);
  }
  return count;
}

template <typename T>
Error embedding_bag_run(RunContext& ctx, EValue* const* args) {
  BagState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& indices = args[1]->tensor;
  const Tensor& offsets = args[2]->tensor;
  if (!check_bags(indices, offsets, args[0]->tensor.sizes[0], st.include_last_offset != 0)) {
    return Error::ExecutionFailed;
  }
  const Tensor& offset2bag = args[10]->tensor;
  const Tensor& bag_size = args[11]->tensor;
  const Tensor& max_indices = args[12]->tensor;
  memset(bag_size.data, 0, bag_size.nbytes());
  memset(max_indices.data, 0, max_indices.nbytes());
  const int64_t bags = args[9]->tensor.sizes[0];
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t begin = index_at(offsets, b);
    const int64_t end = b + 1 < offsets.numel ? index_at(offsets, b + 1) : indices.numel;
    for (int64_t i = begin; i < end && offset2bag.numel > 0; ++i) store_index(offset2bag, i, b);
    const int64_t count = reduce_bag<T>(st, args, b, begin, end);
    if (st.mode != kSum) store_index(bag_size, b, count);
    if (st.mode == kMean) store_index(max_indices, b, count);
  }
  return Error::Ok;
}

Error expect_index_dtype(PrepareContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype == ScalarType::Int64 || t.dtype == ScalarType::Int32) return Error::Ok;
  return fail_dtype(ctx, name, t.dtype);
}

// The sizes of the four outs, as torch's meta function for the op.
Error expect_out_sizes(PrepareContext& ctx, Span<EValue* const> args, const BagState& st,
                       int64_t bags, bool forward_only) {
  const Tensor& weight = args[0]->tensor;
  const Tensor& offsets = args[2]->tensor;
  const int64_t out[] = {bags, weight.sizes[1]};
  TERN_CHECK_OK(expect_dtype(ctx, args[9]->tensor, "out", weight.dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[9]->tensor, "out", out, 2));
  // ATen's float32 sum fast path keeps no offset2bag
  const bool fast_sum =
      st.mode == kSum && weight.dtype == ScalarType::Float32 && st.padding_idx < 0;
  const int64_t offset2bag = fast_sum ? 0 : args[1]->tensor.numel;
  const int64_t bag_size = forward_only ? offsets.numel : bags;
  const char* names[] = {"offset2bag", "bag_size", "max_indices"};
  const int64_t* sizes[] = {&offset2bag, &bag_size, st.mode == kMax ? out : &bags};
  const int dims[] = {1, 1, st.mode == kMax ? 2 : 1};
  for (int k = 0; k < 3; ++k) {
    TERN_CHECK_OK(expect_dtype(ctx, args[10 + k]->tensor, names[k], offsets.dtype));
    TERN_CHECK_OK(expect_sizes(ctx, args[10 + k]->tensor, names[k], sizes[k], dims[k]));
  }
  return Error::Ok;
}

Error check_per_sample_weights(PrepareContext& ctx, const EValue& v, const BagState& st,
                               const Tensor& weight, const Tensor& indices) {
  if (v.is_none()) return Error::Ok;
  if (!v.is_tensor() || st.mode != kSum) {
    return ctx.fail(Error::InvalidProgram, "per_sample_weights must be None, or a tensor in "
                    "sum mode");
  }
  TERN_CHECK_OK(expect_dtype(ctx, v.tensor, "per_sample_weights", weight.dtype));
  return expect_sizes(ctx, v.tensor, "per_sample_weights", &indices.numel, 1);
}

Error embedding_bag_prepare_common(PrepareContext& ctx, Span<EValue* const> args,
                                   bool forward_only) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 13));
  for (size_t i : {0, 1, 2, 9, 10, 11, 12}) TERN_CHECK_OK(ctx.expect_tensor(args, i));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 7, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 8, Tag::Int));
  const Tensor& weight = args[0]->tensor;
  const Tensor& indices = args[1]->tensor;
  const Tensor& offsets = args[2]->tensor;
  switch (weight.dtype) {
    case ScalarType::Float32: ctx.set_run(embedding_bag_run<float>); break;
    case ScalarType::Float64: ctx.set_run(embedding_bag_run<double>); break;
    default: return fail_dtype(ctx, "weight", weight.dtype);
  }
  TERN_CHECK_OK(expect_index_dtype(ctx, indices, "indices"));
  TERN_CHECK_OK(expect_index_dtype(ctx, offsets, "offsets"));
  if (weight.dim != 2 || indices.dim != 1 || offsets.dim != 1) {
    return ctx.fail(Error::InvalidProgram, "weight must be 2-d, indices and offsets 1-d");
  }
  BagState st;
  st.mode = static_cast<int32_t>(args[4]->i);
  st.include_last_offset = args[7]->b ? 1 : 0;
  st.padding_idx = args[8]->i < 0 ? -1 : args[8]->i;
  if (args[4]->i < kSum || args[4]->i > kMax) {
    return ctx.fail(Error::InvalidProgram, "mode must be 0 (sum), 1 (mean) or 2 (max), got %lld",
                    (long long)args[4]->i);
  }
  if (st.include_last_offset && offsets.numel < 1) {
    return ctx.fail(Error::InvalidProgram, "include_last_offset needs at least one offset");
  }
  TERN_CHECK_OK(check_per_sample_weights(ctx, *args[6], st, weight, indices));
  const int64_t bags = offsets.numel - st.include_last_offset;
  TERN_CHECK_OK(expect_out_sizes(ctx, args, st, bags, forward_only));
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

}  // namespace

static Error embedding_bag_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  return embedding_bag_prepare_common(ctx, args, false);
}

static Error embedding_bag_forward_only_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  return embedding_bag_prepare_common(ctx, args, true);
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error embedding_bag_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, embedding_bag_prepare_f32, 4);
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error embedding_bag_forward_only_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, embedding_bag_forward_only_prepare_f32, 4);
}

}  // namespace portable
}  // namespace tern
