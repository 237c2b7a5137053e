#include "kernels/portable/util/reduce.h"

#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

// Bool storage is summed as bytes (0 or 1).
template <typename T>
struct Storage {
  using type = T;
};
template <>
struct Storage<bool> {
  using type = uint8_t;
};

// Sum of n contiguous elements. Eight independent accumulators: the compiler
// vectorizes them, and each sees only n / 8 additions.
template <typename In, typename Acc>
Acc sum_contiguous(const In* p, int64_t n) {
  Acc lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += static_cast<Acc>(p[i + j]);
  }
  Acc acc = 0;
  for (; i < n; ++i) acc += static_cast<Acc>(p[i]);
  return acc + ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

template <typename Out, typename Acc>
Out finish(Acc acc, double scale) {
  if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(static_cast<double>(acc) * scale);
  } else {
    return static_cast<Out>(acc);
  }
}

// Splits the groups before the last into kept and reduced odometers.
void split_outer(const ReducePlan& p, Odometer* kept, Odometer* reduced) {
  for (int g = 0; g + 1 < p.groups; ++g) {
    (p.reduced[g] ? reduced : kept)->add(p.sizes[g], p.strides[g]);
  }
}

// Last group reduced: out[o] = sum over the other reduced groups of a
// contiguous run of the last group's size.
template <typename In, typename Acc, typename Out>
void sum_last_reduced(const In* in, Out* out, const ReducePlan& p, double scale) {
  Odometer kept, reduced;
  split_outer(p, &kept, &reduced);
  const int64_t run = p.sizes[p.groups - 1];
  const int64_t n_out = kept.count();
  const int64_t n_runs = reduced.count();
  for (int64_t o = 0; o < n_out; ++o, kept.next()) {
    Acc acc = 0;
    for (int64_t r = 0; r < n_runs; ++r, reduced.next()) {
      acc += sum_contiguous<In, Acc>(in + kept.offset + reduced.offset, run);
    }
    out[o] = finish<Out>(acc, scale);
  }
}

// Last group kept (K columns): out row o accumulates every reduced input row,
// kSumBlock columns at a time, in `acc` (scratch).
template <typename In, typename Acc, typename Out>
void sum_last_kept(const In* in, Out* out, const ReducePlan& p, double scale, Acc* acc) {
  Odometer kept, reduced;
  split_outer(p, &kept, &reduced);
  const int64_t cols = p.sizes[p.groups - 1];
  const int64_t n_rows = kept.count();
  const int64_t n_reduced = reduced.count();
  for (int64_t o = 0; o < n_rows; ++o, kept.next(), out += cols) {
    for (int64_t c0 = 0; c0 < cols; c0 += kSumBlock) {
      const int64_t n = cols - c0 < kSumBlock ? cols - c0 : kSumBlock;
      for (int64_t c = 0; c < n; ++c) acc[c] = 0;
      for (int64_t r = 0; r < n_reduced; ++r, reduced.next()) {
        const In* row = in + kept.offset + reduced.offset + c0;
        for (int64_t c = 0; c < n; ++c) acc[c] += static_cast<Acc>(row[c]);
      }
      for (int64_t c = 0; c < n; ++c) out[c0 + c] = finish<Out>(acc[c], scale);
    }
  }
}

template <typename InType, typename Out>
void sum(const void* in, void* out, const ReducePlan& plan, double scale, void* scratch) {
  using In = typename Storage<InType>::type;
  // Integer sums wrap (as torch's do): accumulate unsigned, where wrapping is defined.
  using Acc = std::conditional_t<std::is_floating_point_v<Out>, double, uint64_t>;
  const In* x = static_cast<const In*>(in);
  Out* y = static_cast<Out*>(out);
  if (plan.reduced[plan.groups - 1]) {
    sum_last_reduced<In, Acc, Out>(x, y, plan, scale);
  } else {
    sum_last_kept<In, Acc, Out>(x, y, plan, scale, static_cast<Acc*>(scratch));
  }
}

struct SumState {
  uint32_t mask;
  double scale;
  SumFn fn;
};
static_assert(sizeof(SumState) <= PrepareContext::kStateBytes, "state too large");

Error sum_reduction_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const auto* state = static_cast<const SumState*>(ctx.state());
  ReducePlan plan;
  reduce_plan(self, state->mask, &plan);
  state->fn(self.data, args[4]->tensor.data, plan, state->scale, ctx.scratch());
  return Error::Ok;
}

ScalarType default_sum_dtype(ScalarType self, bool mean) {
  if (mean || scalar_type_is_floating(self)) return self;
  return ScalarType::Int64;
}

}  // namespace

Error prepare_sum_reduction(PrepareContext& ctx, Span<EValue* const> args, bool mean) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[4]->tensor;
  SumState state;
  TERN_CHECK_OK(reduce_dims_mask(ctx, *args[1], self.dim, &state.mask));
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[3], "dtype", default_sum_dtype(self.dtype, mean),
                                     &dtype));
  int64_t sizes[kMaxDims];
  const int rank = reduce_out_sizes(self, state.mask, args[2]->b, sizes);
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, rank));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", dtype));
  if (mean && !scalar_type_is_floating(dtype)) {
    return ctx.fail(Error::InvalidProgram, "mean needs a floating dtype, got %s",
                    scalar_type_name(dtype));
  }
  state.fn = select_sum(self.dtype, dtype);
  if (state.fn == nullptr) {
    return ctx.fail(Error::OperatorMissing, "unsupported dtypes: self %s, out %s",
                    scalar_type_name(self.dtype), scalar_type_name(dtype));
  }
  const int64_t count = reduce_count(self, state.mask);
  state.scale = !mean ? 1.0
                : count == 0 ? std::numeric_limits<double>::quiet_NaN()
                             : 1.0 / static_cast<double>(count);
  ReducePlan plan;
  reduce_plan(self, state.mask, &plan);
  ctx.request_scratch(sum_scratch_bytes(plan));
  memcpy(ctx.state(), &state, sizeof(state));
  ctx.set_run(sum_reduction_run);
  return Error::Ok;
}

Error reduce_dims_mask(PrepareContext& ctx, const EValue& dims, int rank, uint32_t* mask) {
  const uint32_t all = (1u << rank) - 1;
  if (dims.is_none()) {
    *mask = all;
    return Error::Ok;
  }
  if (dims.tag != Tag::IntList) {
    return ctx.fail(Error::InvalidProgram, "dim must be IntList or None, got %s",
                    tag_name(dims.tag));
  }
  if (dims.ints.empty()) {
    *mask = all;
    return Error::Ok;
  }
  *mask = 0;
  for (int64_t d : dims.ints) {
    int k = 0;
    TERN_CHECK_OK(normalize_dim(ctx, d, rank, "dim", &k));
    if (rank == 0) continue;  // a 0-d tensor accepts dim 0 / -1 and has nothing to reduce
    if (*mask & (1u << k)) return ctx.fail(Error::InvalidProgram, "dim %d appears more than once", k);
    *mask |= 1u << k;
  }
  return Error::Ok;
}

int reduce_out_sizes(const Tensor& in, uint32_t mask, bool keepdim, int64_t* sizes) {
  int n = 0;
  for (int d = 0; d < in.dim; ++d) {
    if (!(mask & (1u << d))) {
      sizes[n++] = in.sizes[d];
    } else if (keepdim) {
      sizes[n++] = 1;
    }
  }
  return n;
}

int64_t reduce_count(const Tensor& in, uint32_t mask) {
  int64_t n = 1;
  for (int d = 0; d < in.dim; ++d) {
    if (mask & (1u << d)) n *= in.sizes[d];
  }
  return n;
}

void reduce_plan(const Tensor& in, uint32_t mask, ReducePlan* p) {
  p->groups = 0;
  for (int d = 0; d < in.dim; ++d) {
    const int64_t s = in.sizes[d];
    const bool reduced = (mask >> d) & 1u;
    if (s == 1) continue;
    // The input is contiguous: neighbouring dims always merge.
    if (p->groups > 0 && p->reduced[p->groups - 1] == reduced) {
      p->sizes[p->groups - 1] *= s;
    } else {
      p->sizes[p->groups] = s;
      p->reduced[p->groups] = reduced;
      ++p->groups;
    }
  }
  if (p->groups == 0) {  // one element: a kept group of 1 copies it
    p->sizes[0] = 1;
    p->reduced[0] = false;
    p->groups = 1;
  }
  int64_t stride = 1;
  for (int g = p->groups - 1; g >= 0; --g) {
    p->strides[g] = stride;
    stride *= p->sizes[g];
  }
}

size_t sum_scratch_bytes(const ReducePlan& plan) {
  if (plan.reduced[plan.groups - 1]) return 0;
  const int64_t cols = plan.sizes[plan.groups - 1];
  return static_cast<size_t>(cols < kSumBlock ? cols : kSumBlock) * 8;  // double or uint64
}

SumFn select_sum(ScalarType in, ScalarType out) {
  switch (out) {
    case ScalarType::Float32:
      return in == ScalarType::Float32 ? sum<float, float> : nullptr;
    case ScalarType::Float64:
      if (in == ScalarType::Float64) return sum<double, double>;
      return in == ScalarType::Float32 ? sum<float, double> : nullptr;
    case ScalarType::Int32:
      return in == ScalarType::Int32 ? sum<int32_t, int32_t> : nullptr;
    case ScalarType::Int64:
      switch (in) {
        case ScalarType::Int64: return sum<int64_t, int64_t>;
        case ScalarType::Int32: return sum<int32_t, int64_t>;
        case ScalarType::Int8: return sum<int8_t, int64_t>;
        case ScalarType::UInt8: return sum<uint8_t, int64_t>;
        case ScalarType::Bool: return sum<bool, int64_t>;
        default: return nullptr;
      }
    default:
      return nullptr;
  }
}

}  // namespace portable
}  // namespace tern
