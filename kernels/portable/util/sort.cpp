#include "kernels/portable/util/half.h"
#include "kernels/portable/util/sort.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"  // DimSplit

namespace tern {
namespace portable {
namespace {

// Lines sort on keys of two types: int64 for integer and bool selves,
// double for floating ones. Both conversions keep the order and NaN, so the
// algorithms compare and move exactly as they would on the original type.
template <typename K>
struct Entry {
  K value;
  int64_t index;
};
constexpr size_t kEntryBytes = 16;
static_assert(sizeof(Entry<int64_t>) == kEntryBytes && sizeof(Entry<double>) == kEntryBytes, "");

template <typename T>
bool is_nan(T x) {
  if constexpr (kIsFloat<T>) {
    return x != x;
  } else {
    return false;
  }
}

// True if a goes before b: larger first (kDescending) or smaller first, a
// NaN larger than every number and equal to another NaN.
template <typename T, bool kDescending>
struct Before {
  bool operator()(const Entry<T>& a, const Entry<T>& b) const {
    if (kDescending) return (is_nan(a.value) && !is_nan(b.value)) || a.value > b.value;
    return (!is_nan(a.value) && is_nan(b.value)) || a.value < b.value;
  }
};

// As Before, equal values in index order: a total order, so any sort gives
// the one stable result.
template <typename T, bool kDescending>
struct BeforeStable {
  bool operator()(const Entry<T>& a, const Entry<T>& b) const {
    const Before<T, kDescending> before;
    if (before(a, b)) return true;
    if (before(b, a)) return false;
    return a.index < b.index;
  }
};

// Orders the n pairs of a line so that its first k are the result.
template <typename T, bool kDescending, bool kStable>
struct SortOrder {
  static void apply(Entry<T>* e, int64_t n, int64_t, bool) {
    if constexpr (kStable) {
      std::sort(e, e + n, BeforeStable<T, kDescending>());
    } else {
      std::sort(e, e + n, Before<T, kDescending>());
    }
  }
};

// The algorithms of torch's topk, for its order of equal values (sort.h).
template <typename T, bool kLargest>
struct TopkOrder {
  static void apply(Entry<T>* e, int64_t n, int64_t k, bool sorted) {
    const Before<T, kLargest> before;
    if (k * 64 <= n) {
      std::partial_sort(e, e + k, e + n, before);
      return;
    }
    std::nth_element(e, e + k - 1, e + n, before);
    if (sorted) std::sort(e, e + k - 1, before);
  }
};

struct OrderState {
  DimSplit split;  // self as [outer, n, inner]
  int64_t k;       // pairs kept per line: the outs' size along dim
  int32_t values;  // index of the values out in args (indices follows)
  bool sorted;     // topk's `sorted`
};
static_assert(sizeof(OrderState) <= PrepareContext::kStateBytes, "state too large");

// Element i of an array of dtype t set to the key v, which came from an
// element of that dtype (so a 16-bit float converts back exactly).
template <typename K>
void store(void* base, ScalarType t, int64_t i, K v) {
  switch (t) {
    case ScalarType::Float32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case ScalarType::Float64: static_cast<double*>(base)[i] = static_cast<double>(v); break;
    case ScalarType::Float16: static_cast<Half*>(base)[i] = static_cast<float>(v); break;
    case ScalarType::BFloat16: static_cast<BFloat16*>(base)[i] = static_cast<float>(v); break;
    case ScalarType::Int8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); break;
    case ScalarType::UInt8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); break;
    case ScalarType::Int16: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v); break;
    case ScalarType::Int32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case ScalarType::Int64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case ScalarType::Bool: static_cast<uint8_t*>(base)[i] = v != K(0); break;
    default: break;
  }
}

template <typename K, typename Order>
Error order_run(RunContext& ctx, EValue* const* args) {
  OrderState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const DimSplit s = st.split;
  const Tensor& self = args[0]->tensor;
  Tensor& values = args[st.values]->tensor;
  int64_t* indices = args[st.values + 1]->tensor.data_as<int64_t>();
  if (s.size == 0 || st.k == 0) return Error::Ok;
  const int64_t grain = std::max<int64_t>(1, 16384 / s.size);
  ctx.parallel_for(s.outer * s.inner, grain, [&](RunContext& c, int64_t begin, int64_t end) {
    auto* e = static_cast<Entry<K>*>(c.scratch());
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / s.inner, i = line % s.inner;
      const int64_t in = o * s.size * s.inner + i;  // the line's first element
      for (int64_t j = 0; j < s.size; ++j) {
        e[j] = {elem_load<K>(self.data, self.dtype, in + j * s.inner), j};  // bool: 0 / 1
      }
      Order::apply(e, s.size, st.k, st.sorted);
      const int64_t out = o * st.k * s.inner + i;
      for (int64_t j = 0; j < st.k; ++j) {
        store(values.data, values.dtype, out + j * s.inner, e[j].value);
        indices[out + j * s.inner] = e[j].index;
      }
    }
  });
  return Error::Ok;
}

// order_run for self's dtype with Order<its key type>; nullptr for a dtype
// without a loop.
template <template <typename> class Order>
RunFn select_order(ScalarType t, bool with_bool) {
  if (scalar_type_is_floating(t)) return order_run<double, Order<double>>;
  if (t == ScalarType::Bool && !with_bool) return nullptr;
  return elem_dtype_supported(t) ? order_run<int64_t, Order<int64_t>> : nullptr;
}

template <bool kDescending, bool kStable>
struct SortAs {
  template <typename T>
  using type = SortOrder<T, kDescending, kStable>;
};

template <bool kLargest>
struct TopkAs {
  template <typename T>
  using type = TopkOrder<T, kLargest>;
};

RunFn select_sort(ScalarType t, bool descending, bool stable) {
  if (descending) {
    return stable ? select_order<SortAs<true, true>::type>(t, true)
                  : select_order<SortAs<true, false>::type>(t, true);
  }
  return stable ? select_order<SortAs<false, true>::type>(t, true)
                : select_order<SortAs<false, false>::type>(t, true);
}

// Checks the two outs (sizes: self's with `k` along dim) and finishes
// prepare: state, scratch for one line per thread, run function.
Error finish_prepare(PrepareContext& ctx, Span<EValue* const> args, int dim, int64_t k,
                     bool sorted, RunFn run) {
  const Tensor& self = args[0]->tensor;
  const int32_t values = static_cast<int32_t>(args.size() - 2);
  TERN_CHECK_OK(ctx.expect_tensor(args, values));
  TERN_CHECK_OK(ctx.expect_tensor(args, values + 1));
  int64_t sizes[kMaxDims];
  for (int d = 0; d < self.dim; ++d) sizes[d] = d == dim ? k : self.sizes[d];
  TERN_CHECK_OK(expect_sizes(ctx, args[values]->tensor, "values", sizes, self.dim));
  TERN_CHECK_OK(expect_sizes(ctx, args[values + 1]->tensor, "indices", sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[values]->tensor, "values", self.dtype));
  TERN_CHECK_OK(expect_dtype(ctx, args[values + 1]->tensor, "indices", ScalarType::Int64));
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  OrderState st;
  st.split = dim_split(self, dim);
  st.k = k;
  st.values = values;
  st.sorted = sorted;
  ctx.request_scratch(static_cast<size_t>(st.split.size) * kEntryBytes);
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error prepare_sort(PrepareContext& ctx, Span<EValue* const> args, bool with_stable_arg) {
  const size_t a = with_stable_arg ? 2 : 1;  // the dim argument
  TERN_CHECK_OK(ctx.expect_arg_count(args, a + 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, a, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, a + 1, Tag::Bool));
  bool stable = false;
  if (with_stable_arg && !args[1]->is_none()) {
    TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Bool));
    stable = args[1]->b;
  }
  const Tensor& self = args[0]->tensor;
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[a]->i, self.dim, "dim", &dim));
  const RunFn run = select_sort(self.dtype, args[a + 1]->b, stable);
  const int64_t n = self.dim == 0 ? 1 : self.sizes[dim];
  return finish_prepare(ctx, args, dim, n, /*sorted=*/true, run);
}

Error prepare_topk(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Bool));
  const Tensor& self = args[0]->tensor;
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[2]->i, self.dim, "dim", &dim));
  const int64_t n = self.dim == 0 ? 1 : self.sizes[dim];
  const int64_t k = args[1]->i;
  if (k < 0 || k > n) {
    return ctx.fail(Error::InvalidProgram, "k %lld out of range for %lld elements along dim %d",
                    (long long)k, (long long)n, dim);
  }
  if (self.dtype == ScalarType::Bool) {
    return ctx.fail(Error::InvalidProgram, "topk of a bool self (torch has none)");
  }
  const RunFn run = args[3]->b ? select_order<TopkAs<true>::type>(self.dtype, false)
                               : select_order<TopkAs<false>::type>(self.dtype, false);
  // A 0-d self gives its one element for k = 0 too (as torch): the 0-d outs hold one.
  return finish_prepare(ctx, args, dim, self.dim == 0 ? 1 : k, args[4]->b, run);
}

}  // namespace portable
}  // namespace tern
