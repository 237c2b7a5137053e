#include "kernels/portable/util/half.h"
#include "kernels/portable/util/reduce.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise.h"

namespace tern {
namespace portable {
namespace {

struct AddOp {
  static constexpr int kIdentity = 0;
  template <typename A>
  static A apply(A a, A b) { return a + b; }
};

struct MulOp {
  static constexpr int kIdentity = 1;
  template <typename A>
  static A apply(A a, A b) { return a * b; }
};

// Fold of n contiguous elements. Eight independent accumulators: the
// compiler vectorizes them, and each sees only n / 8 steps.
template <typename Op, typename B, typename Acc>
Acc fold_contiguous(const B* p, int64_t n) {
  Acc lanes[8];
  for (Acc& lane : lanes) lane = static_cast<Acc>(Op::kIdentity);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] = Op::apply(lanes[j], static_cast<Acc>(p[i + j]));
  }
  Acc acc = static_cast<Acc>(Op::kIdentity);
  for (; i < n; ++i) acc = Op::apply(acc, static_cast<Acc>(p[i]));
  const Acc a = Op::apply(Op::apply(lanes[0], lanes[1]), Op::apply(lanes[2], lanes[3]));
  const Acc b = Op::apply(Op::apply(lanes[4], lanes[5]), Op::apply(lanes[6], lanes[7]));
  return Op::apply(acc, Op::apply(a, b));
}

template <typename Out, typename Acc>
Out finish(Acc acc, double scale) {
  if constexpr (kIsFloat<Out>) {
    return static_cast<Out>(static_cast<double>(acc) * scale);
  } else {
    return static_cast<Out>(acc);
  }
}

// Last group reduced: out[o] = fold over the other reduced groups of a
// contiguous run of the last group's size, read kElemChunk elements at a
// time as B.
template <typename Op, typename B, typename Acc, typename Out>
void fold_last_reduced(const ElemInput& in, Out* out, const ReducePlan& p, double scale) {
  Odometer kept, reduced;
  reduce_odometers(p, &kept, &reduced);
  const int64_t run = p.sizes[p.groups - 1];
  const int64_t n_out = kept.count();
  const int64_t n_runs = reduced.count();
  B buf[kElemChunk];
  for (int64_t o = 0; o < n_out; ++o, kept.next()) {
    Acc acc = static_cast<Acc>(Op::kIdentity);
    for (int64_t r = 0; r < n_runs; ++r, reduced.next()) {
      for (int64_t i = 0; i < run; i += kElemChunk) {
        const int64_t n = std::min(run - i, kElemChunk);
        const B* x = elem_chunk(in, kept.offset + reduced.offset + i, 1, n, buf).p;
        acc = Op::apply(acc, fold_contiguous<Op, B, Acc>(x, n));
      }
    }
    out[o] = finish<Out>(acc, scale);
  }
}

// Last group kept (K columns): out row o folds every reduced input row,
// kSumBlock columns at a time, into `acc` (scratch).
template <typename Op, typename B, typename Acc, typename Out>
void fold_last_kept(const ElemInput& in, Out* out, const ReducePlan& p, double scale, Acc* acc) {
  Odometer kept, reduced;
  reduce_odometers(p, &kept, &reduced);
  const int64_t cols = p.sizes[p.groups - 1];
  const int64_t n_rows = kept.count();
  const int64_t n_reduced = reduced.count();
  B buf[kElemChunk];
  for (int64_t o = 0; o < n_rows; ++o, kept.next(), out += cols) {
    for (int64_t c0 = 0; c0 < cols; c0 += kSumBlock) {
      const int64_t n = std::min(cols - c0, kSumBlock);
      for (int64_t c = 0; c < n; ++c) acc[c] = static_cast<Acc>(Op::kIdentity);
      for (int64_t r = 0; r < n_reduced; ++r, reduced.next()) {
        for (int64_t i = 0; i < n; i += kElemChunk) {
          const int64_t m = std::min(n - i, kElemChunk);
          const B* x = elem_chunk(in, kept.offset + reduced.offset + c0 + i, 1, m, buf).p;
          for (int64_t c = 0; c < m; ++c) acc[i + c] = Op::apply(acc[i + c], static_cast<Acc>(x[c]));
        }
      }
      for (int64_t c = 0; c < n; ++c) out[c0 + c] = finish<Out>(acc[c], scale);
    }
  }
}

// Acc, the accumulator: double for floating sums; the out type for floating
// products, so they overflow to inf where torch's do (float32 for the 16-bit
// types, rounded once at the end); uint64 for integer and
// bool outs, which wrap as torch's do. B, the type the input is read as:
// bool for a bool out (x != 0 first, as torch converts the input to the out
// dtype: a product of nonzero integers must not wrap to 0), int64 for
// integer outs, else Acc. An integer out takes the low bits of the uint64
// fold, which depend neither on converting the input to the out type first
// nor on the out's signedness: one loop per out width.
template <typename Op, typename Out>
struct FoldTypes {
  static constexpr bool kFloat = kIsFloat<Out>;
  using Acc = std::conditional_t<!kFloat, uint64_t,
                                 std::conditional_t<std::is_same_v<Op, MulOp>, OpMath<Out>, double>>;
  using B = std::conditional_t<kFloat, Acc, std::conditional_t<std::is_same_v<Out, bool>, bool, int64_t>>;
};

template <typename Op, typename Out>
void fold(const Tensor& in, void* out, const ReducePlan& plan, double scale, void* scratch) {
  using B = typename FoldTypes<Op, Out>::B;
  using Acc = typename FoldTypes<Op, Out>::Acc;
  const ElemInput x = {in.data, in.dtype, in.dim, in.sizes, in.numel};
  Out* y = static_cast<Out*>(out);
  if (plan.reduced[plan.groups - 1]) {
    fold_last_reduced<Op, B, Acc, Out>(x, y, plan, scale);
  } else {
    fold_last_kept<Op, B, Acc, Out>(x, y, plan, scale, static_cast<Acc*>(scratch));
  }
}

template <typename Op>
FoldFn select_fold_op(ScalarType in, ScalarType out) {
  if (!elem_dtype_supported(in)) return nullptr;
  switch (out) {
    case ScalarType::Float32: return fold<Op, float>;
    case ScalarType::Float64: return fold<Op, double>;
    case ScalarType::Float16: return fold<Op, Half>;
    case ScalarType::BFloat16: return fold<Op, BFloat16>;
    case ScalarType::Bool: return fold<Op, bool>;
    default: break;
  }
  if (scalar_type_is_floating(in)) return nullptr;  // floating -> integer: no loop
  switch (out) {
    case ScalarType::Int8:
    case ScalarType::UInt8: return fold<Op, uint8_t>;
    case ScalarType::Int16: return fold<Op, uint16_t>;
    case ScalarType::Int32: return fold<Op, uint32_t>;
    case ScalarType::Int64: return fold<Op, uint64_t>;
    default: return nullptr;
  }
}

struct FoldState {
  uint32_t mask;
  int32_t out;  // index of the out tensor in args
  double scale;
  FoldFn fn;
};
static_assert(sizeof(FoldState) <= PrepareContext::kStateBytes, "state too large");

Error fold_reduction_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const auto* state = static_cast<const FoldState*>(ctx.state());
  ReducePlan plan;
  reduce_plan(self, state->mask, &plan);
  state->fn(self, args[state->out]->tensor.data, plan, state->scale, ctx.scratch());
  return Error::Ok;
}

ScalarType default_fold_dtype(ScalarType self, Fold fold) {
  if (fold == Fold::kMean || scalar_type_is_floating(self)) return self;
  return ScalarType::Int64;
}

// The reduced dims and keepdim of an argument list (checked).
Error parse_fold_args(PrepareContext& ctx, Span<EValue* const> args, FoldArgs shape,
                      uint32_t* mask, bool* keepdim) {
  const int rank = args[0]->tensor.dim;
  *keepdim = false;
  if (shape == FoldArgs::kAll) {
    *mask = rank == 0 ? 0u : (1u << rank) - 1;
    return Error::Ok;
  }
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  *keepdim = args[2]->b;
  if (shape == FoldArgs::kDimList) return reduce_dims_mask(ctx, *args[1], rank, mask);
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  int d = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, rank, "dim", &d));
  *mask = rank == 0 ? 0u : 1u << d;
  return Error::Ok;
}

}  // namespace

Error prepare_fold_reduction(PrepareContext& ctx, Span<EValue* const> args, FoldArgs shape,
                             Fold fold) {
  const size_t n_args = shape == FoldArgs::kAll ? 3 : 5;
  TERN_CHECK_OK(ctx.expect_arg_count(args, n_args));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, n_args - 1));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[n_args - 1]->tensor;
  FoldState state;
  state.out = static_cast<int32_t>(n_args - 1);
  bool keepdim = false;
  TERN_CHECK_OK(parse_fold_args(ctx, args, shape, &state.mask, &keepdim));
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[n_args - 2], "dtype",
                                     default_fold_dtype(self.dtype, fold), &dtype));
  int64_t sizes[kMaxDims];
  const int rank = reduce_out_sizes(self, state.mask, keepdim, sizes);
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, rank));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", dtype));
  const bool mean = fold == Fold::kMean;
  if (mean && !scalar_type_is_floating(dtype)) {
    return ctx.fail(Error::InvalidProgram, "mean needs a floating dtype, got %s",
                    scalar_type_name(dtype));
  }
  state.fn = select_fold(fold, self.dtype, dtype);
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
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(fold_reduction_run);
  return Error::Ok;
}

Error reduce_dims_mask(PrepareContext& ctx, const EValue& dims, int rank, uint32_t* mask,
                       bool empty_is_all) {
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
    *mask = empty_is_all ? all : 0u;
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
  return static_cast<size_t>(cols < kSumBlock ? cols : kSumBlock) * 8;  // at most 8-byte accumulators
}

FoldFn select_fold(Fold fold, ScalarType in, ScalarType out) {
  return fold == Fold::kProd ? select_fold_op<MulOp>(in, out) : select_fold_op<AddOp>(in, out);
}

void reduce_odometers(const ReducePlan& p, Odometer* kept, Odometer* reduced) {
  for (int g = 0; g + 1 < p.groups; ++g) {
    (p.reduced[g] ? reduced : kept)->add(p.sizes[g], p.strides[g]);
  }
}

}  // namespace portable
}  // namespace tern
