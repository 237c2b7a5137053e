#include "kernels/portable/util/half.h"
#include "kernels/portable/util/minmax.h"

#include <cstring>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {
namespace {

// True if x replaces `best` as the running max (min): strictly greater
// (smaller), so ties keep the first; a NaN replaces any number, never a NaN.
template <typename T, bool kMax>
bool better(T x, T best) {
  if constexpr (kIsFloat<T>) {
    if (x != x) return best == best;
  }
  return kMax ? x > best : x < best;
}

// amax / amin ---------------------------------------------------------------

// Last group reduced: out[o] is the extreme of contiguous runs of the input.
template <typename T, bool kMax>
void extreme_last_reduced(const T* in, T* out, const ReducePlan& p, Odometer& kept,
                          Odometer& reduced) {
  const int64_t run = p.sizes[p.groups - 1];
  const int64_t n_out = kept.count(), n_runs = reduced.count();
  for (int64_t o = 0; o < n_out; ++o, kept.next()) {
    T acc = in[kept.offset];  // reduced.offset is 0 here: it wraps after each out element
    for (int64_t r = 0; r < n_runs; ++r, reduced.next()) {
      const T* s = in + kept.offset + reduced.offset;
      for (int64_t i = 0; i < run; ++i) acc = better<T, kMax>(s[i], acc) ? s[i] : acc;
    }
    out[o] = acc;
  }
}

// Last group kept (cols): out row o starts as the first reduced input row and
// takes the extreme with each following one.
template <typename T, bool kMax>
void extreme_last_kept(const T* in, T* out, const ReducePlan& p, Odometer& kept,
                       Odometer& reduced) {
  const int64_t cols = p.sizes[p.groups - 1];
  const int64_t n_rows = kept.count(), n_reduced = reduced.count();
  for (int64_t o = 0; o < n_rows; ++o, kept.next(), out += cols) {
    memmove(out, in + kept.offset, static_cast<size_t>(cols) * sizeof(T));
    reduced.next();
    for (int64_t r = 1; r < n_reduced; ++r, reduced.next()) {
      const T* row = in + kept.offset + reduced.offset;
      for (int64_t c = 0; c < cols; ++c) out[c] = better<T, kMax>(row[c], out[c]) ? row[c] : out[c];
    }
  }
}

using ExtremeFn = void (*)(const void* in, void* out, const ReducePlan& plan);

template <typename T, bool kMax>
struct ExtremeOp {
  static void run(const void* in, void* out, const ReducePlan& p) {
    Odometer kept, reduced;
    reduce_odometers(p, &kept, &reduced);
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (p.reduced[p.groups - 1]) {
      extreme_last_reduced<T, kMax>(x, y, p, kept, reduced);
    } else {
      extreme_last_kept<T, kMax>(x, y, p, kept, reduced);
    }
  }
};

// argmax / argmin / max.dim / min.dim -----------------------------------------

struct ArgShape {
  int64_t outer, n, inner;  // n >= 1
};

// values: [outer, inner] when values_stride == inner, or one reused row of
// `inner` (scratch) when values_stride == 0; indices: [outer, inner].
using ArgFn = void (*)(const void* in, void* values, int64_t values_stride, int64_t* indices,
                       const ArgShape& s);

template <typename T, bool kMax>
struct ArgOp {
  static void run(const void* in, void* values, int64_t values_stride, int64_t* indices,
                  const ArgShape& s) {
    const T* x = static_cast<const T*>(in);
    T* best = static_cast<T*>(values);
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t j = 0; j < s.inner; ++j) {
        best[j] = x[j];
        indices[j] = 0;
      }
      for (int64_t k = 1; k < s.n; ++k) {
        const T* row = x + k * s.inner;
        for (int64_t j = 0; j < s.inner; ++j) {
          if (better<T, kMax>(row[j], best[j])) {
            best[j] = row[j];
            indices[j] = k;
          }
        }
      }
      x += s.n * s.inner;
      best += values_stride;
      indices += s.inner;
    }
  }
};

// Op<T, kMax>::run for self's dtype (bool as its 0 / 1 bytes), or nullptr.
template <template <typename, bool> class Op, bool kMax>
decltype(&Op<float, kMax>::run) by_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return Op<float, kMax>::run;
    case ScalarType::Float64: return Op<double, kMax>::run;
    case ScalarType::Float16: return Op<Half, kMax>::run;
    case ScalarType::BFloat16: return Op<BFloat16, kMax>::run;
    case ScalarType::Int8: return Op<int8_t, kMax>::run;
    case ScalarType::UInt8: return Op<uint8_t, kMax>::run;
    case ScalarType::Int16: return Op<int16_t, kMax>::run;
    case ScalarType::Int32: return Op<int32_t, kMax>::run;
    case ScalarType::Int64: return Op<int64_t, kMax>::run;
    case ScalarType::Bool: return Op<uint8_t, kMax>::run;
    default: return nullptr;
  }
}

template <template <typename, bool> class Op>
decltype(&Op<float, true>::run) select(ScalarType t, bool max) {
  return max ? by_dtype<Op, true>(t) : by_dtype<Op, false>(t);
}

struct ExtremeState {
  uint32_t mask;
  int out;  // the out tensor's argument: 3 (amax, amin) or 1 (max, min)
  ExtremeFn fn;
};

struct ArgState {
  ArgShape shape;
  ArgFn fn;
};

Error amax_amin_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  ExtremeState st;
  memcpy(&st, ctx.state(), sizeof(st));
  Tensor& out = args[st.out]->tensor;
  if (out.numel == 0) return Error::Ok;
  ReducePlan plan;
  reduce_plan(self, st.mask, &plan);
  st.fn(self.data, out.data, plan);
  return Error::Ok;
}

Error argmax_argmin_run(RunContext& ctx, EValue* const* args) {
  ArgState st;
  memcpy(&st, ctx.state(), sizeof(st));
  st.fn(args[0]->tensor.data, ctx.scratch(), 0, args[3]->tensor.data_as<int64_t>(), st.shape);
  return Error::Ok;
}

Error max_min_dim_run(RunContext& ctx, EValue* const* args) {
  ArgState st;
  memcpy(&st, ctx.state(), sizeof(st));
  st.fn(args[0]->tensor.data, args[3]->tensor.data, st.shape.inner,
        args[4]->tensor.data_as<int64_t>(), st.shape);
  return Error::Ok;
}

// [outer, n, inner] around dim (None: the whole tensor, flattened), and the
// bitmask of reduced dims for reduce_out_sizes. Fails on an empty reduced dim.
Error arg_shape(PrepareContext& ctx, const Tensor& self, const EValue& dim, ArgShape* s,
                uint32_t* mask) {
  *s = ArgShape{1, self.numel, 1};
  *mask = (1u << self.dim) - 1;
  if (!dim.is_none()) {
    if (!dim.is_int()) {
      return ctx.fail(Error::InvalidProgram, "dim must be an int, got %s", tag_name(dim.tag));
    }
    int d = 0;
    TERN_CHECK_OK(normalize_dim(ctx, dim.i, self.dim, "dim", &d));
    if (self.dim > 0) {
      *mask = 1u << d;
      s->n = self.sizes[d];
      for (int k = 0; k < d; ++k) s->outer *= self.sizes[k];
      for (int k = d + 1; k < self.dim; ++k) s->inner *= self.sizes[k];
    }
  }
  if (s->n == 0) {
    return ctx.fail(Error::InvalidProgram, "cannot reduce an empty dim: max/min have no identity");
  }
  return Error::Ok;
}

Error expect_reduced(PrepareContext& ctx, const Tensor& self, const Tensor& t, const char* name,
                     uint32_t mask, bool keepdim, ScalarType dtype) {
  int64_t sizes[kMaxDims];
  const int rank = reduce_out_sizes(self, mask, keepdim, sizes);
  TERN_CHECK_OK(expect_sizes(ctx, t, name, sizes, rank));
  return expect_dtype(ctx, t, name, dtype);
}

}  // namespace

namespace {

// The max/min of self over the dims in `mask` into args[out] (amax, amin,
// max, min); a reduced dim of size 0 has no identity and is refused.
Error prepare_extreme(PrepareContext& ctx, Span<EValue* const> args, int out, uint32_t mask, bool keepdim, bool max) {
  const Tensor& self = args[0]->tensor;
  for (int d = 0; d < self.dim; ++d) {
    if ((mask >> d & 1u) && self.sizes[d] == 0) {
      return ctx.fail(Error::InvalidProgram, "cannot reduce dim %d of size 0 (no identity)", d);
    }
  }
  TERN_CHECK_OK(expect_reduced(ctx, self, args[out]->tensor, "out", mask, keepdim, self.dtype));
  ExtremeState st;
  st.mask = mask, st.out = out;
  st.fn = select<ExtremeOp>(self.dtype, max);
  if (st.fn == nullptr) return fail_dtype(ctx, "self", self.dtype);
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(amax_amin_run);
  return Error::Ok;
}

}  // namespace

Error prepare_amax_amin(PrepareContext& ctx, Span<EValue* const> args, bool max) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  uint32_t mask = 0;
  TERN_CHECK_OK(reduce_dims_mask(ctx, *args[1], args[0]->tensor.dim, &mask));
  return prepare_extreme(ctx, args, 3, mask, args[2]->b, max);
}

Error prepare_max_min_all(PrepareContext& ctx, Span<EValue* const> args, bool max) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  const int dim = args[0]->tensor.dim;
  const uint32_t every = dim == 0 ? 0u : uint32_t((uint64_t(1) << dim) - 1);
  return prepare_extreme(ctx, args, 1, every, /*keepdim=*/false, max);
}

Error prepare_argmax_argmin(PrepareContext& ctx, Span<EValue* const> args, bool max) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  ArgState st;
  uint32_t mask = 0;
  TERN_CHECK_OK(arg_shape(ctx, self, *args[1], &st.shape, &mask));
  TERN_CHECK_OK(
      expect_reduced(ctx, self, args[3]->tensor, "out", mask, args[2]->b, ScalarType::Int64));
  st.fn = self.dtype == ScalarType::Bool ? nullptr : select<ArgOp>(self.dtype, max);
  if (st.fn == nullptr) return fail_dtype(ctx, "self", self.dtype);
  ctx.request_scratch(static_cast<size_t>(st.shape.inner) * scalar_type_size(self.dtype));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(argmax_argmin_run);
  return Error::Ok;
}

Error prepare_max_min_dim(PrepareContext& ctx, Span<EValue* const> args, bool max) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& self = args[0]->tensor;
  ArgState st;
  uint32_t mask = 0;
  TERN_CHECK_OK(arg_shape(ctx, self, *args[1], &st.shape, &mask));
  const bool keepdim = args[2]->b;
  TERN_CHECK_OK(expect_reduced(ctx, self, args[3]->tensor, "values", mask, keepdim, self.dtype));
  TERN_CHECK_OK(
      expect_reduced(ctx, self, args[4]->tensor, "indices", mask, keepdim, ScalarType::Int64));
  st.fn = select<ArgOp>(self.dtype, max);
  if (st.fn == nullptr) return fail_dtype(ctx, "self", self.dtype);
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(max_min_dim_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
