// aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *,
//                          bool include_self=True) -> Tensor
// args: [self, dim, index, src, reduce, include_self, out]
//
// out = self, then each selected element out[i][index[i][j][k]][k] (dim = 1)
// is reduced with the src elements scattered to it, in index order:
//   "sum"  +      "prod"  *      "amax" max      "amin" min (NaN wins, as torch)
//   "mean" the sum divided by the count of values (floor division for
//          integer dtypes, as torch)
// Without include_self, a selected element's own value is left out (it
// starts from the reduction's identity and mean does not count it);
// elements that no entry selects keep self's value either way.
// Every dtype; src has self's dtype; integers wrap on overflow; for bool,
// sum/amax are logical or, prod/amin logical and, and mean is not defined
// (as in torch). index int64 or int32 (util/scatter.h has the shape rules);
// an entry outside [0, self.size(dim)) fails at run (ExecutionFailed).
// "mean" counts in scratch: 8 bytes per element of self.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"
#include "kernels/portable/util/scatter.h"

namespace tern {
namespace portable {
namespace {

enum class Reduce : int32_t { Sum, Prod, Mean, Amax, Amin };

struct ScatterReduceState {
  int32_t dim;
  Reduce reduce;
  bool include_self;
};

template <typename T>
T identity(Reduce r) {
  using L = std::numeric_limits<T>;
  switch (r) {
    case Reduce::Prod: return T(1);
    case Reduce::Amax: return L::has_infinity ? T(-L::infinity()) : L::lowest();
    case Reduce::Amin: return L::has_infinity ? L::infinity() : L::max();
    default: return T(0);
  }
}

// x / count, rounded down for integers (torch divides integer means with
// rounding_mode="floor").
template <typename T>
T mean_of(T x, int64_t count) {
  if constexpr (kIsFloat<T>) {
    return x / static_cast<T>(count);
  } else {
    const int64_t v = static_cast<int64_t>(x);
    const int64_t q = v / count;
    return static_cast<T>(q * count != v && v < 0 ? q - 1 : q);
  }
}

// out = self reduced with src; returns -1 or the position in index of the
// first entry out of range.
template <typename T>
int64_t reduce_into(const ScatterReduceState& st, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const Tensor& index = args[2]->tensor;
  const Tensor& src = args[3]->tensor;
  const Tensor& out = args[6]->tensor;
  T* d = out.data_as<T>();
  copy_bytes(out.data, self.data, self.nbytes());
  if (!st.include_self) {  // the selected elements start from the identity
    const T init = identity<T>(st.reduce);
    const int64_t bad = for_each_scatter_entry(self, st.dim, index, nullptr, [&](int64_t at, int64_t, int64_t) {
      d[at] = init;
    });
    if (bad >= 0) return bad;
  }
  switch (st.reduce) {
    case Reduce::Prod:
      return scatter_combine(self, st.dim, index, src, d, scatter_prod<T>);
    case Reduce::Amax:
      return scatter_combine(self, st.dim, index, src, d, [](T a, T b) { return b > a || b != b ? b : a; });
    case Reduce::Amin:
      return scatter_combine(self, st.dim, index, src, d, [](T a, T b) { return b < a || b != b ? b : a; });
    default:  // sum, mean
      return scatter_combine(self, st.dim, index, src, d, scatter_sum<T>);
  }
}

// Divides each selected element by its count of values (include_self adds
// one); `count` is the scratch, one int64 per element of out.
template <typename T>
void divide_means(const ScatterReduceState& st, EValue* const* args, int64_t* count) {
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[6]->tensor;
  if (out.numel == 0) return;
  memset(count, 0, static_cast<size_t>(out.numel) * sizeof(int64_t));
  for_each_scatter_entry(self, st.dim, args[2]->tensor, nullptr, [&](int64_t at, int64_t, int64_t) { ++count[at]; });
  T* d = out.data_as<T>();
  for (int64_t i = 0; i < out.numel; ++i) {
    const int64_t n = count[i] + (st.include_self ? 1 : 0);
    if (count[i] > 0) d[i] = mean_of(d[i], n);
  }
}

struct ScatterReduce {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    ScatterReduceState st;
    memcpy(&st, ctx.state(), sizeof(st));
    const int64_t bad = reduce_into<T>(st, args);
    if (bad >= 0) return fail_scatter_index("aten::scatter_reduce", args[0]->tensor, st.dim, args[2]->tensor, bad);
    if constexpr (!std::is_same_v<T, bool>) {
      if (st.reduce == Reduce::Mean) divide_means<T>(st, args, static_cast<int64_t*>(ctx.scratch()));
    }
    return Error::Ok;
  }
};

bool parse_reduce(const char* s, Reduce* r) {
  static const struct {
    const char* name;
    Reduce r;
  } kNames[] = {{"sum", Reduce::Sum}, {"prod", Reduce::Prod}, {"mean", Reduce::Mean},
                {"amax", Reduce::Amax}, {"amin", Reduce::Amin}};
  for (const auto& n : kNames) {
    if (strcmp(s, n.name) == 0) {
      *r = n.r;
      return true;
    }
  }
  return false;
}

}  // namespace

Error scatter_reduce_two_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::String));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  ScatterReduceState st{0, Reduce::Sum, args[5]->b};
  int dim = 0;
  TERN_CHECK_OK(expect_scatter(ctx, args, /*has_src=*/true, 6, &dim));
  st.dim = dim;
  if (!parse_reduce(args[4]->str, &st.reduce)) {
    return ctx.fail(Error::InvalidProgram, "reduce must be sum, prod, mean, amax or amin, got \"%s\"", args[4]->str);
  }
  const Tensor& self = args[0]->tensor;
  if (st.reduce == Reduce::Mean && self.dtype == ScalarType::Bool) {
    return ctx.fail(Error::InvalidProgram, "reduce \"mean\" is not defined for bool (as in torch)");
  }
  RunFn run = select_all<ScatterReduce>(self.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  if (st.reduce == Reduce::Mean) ctx.request_scratch(static_cast<size_t>(self.numel) * sizeof(int64_t));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
