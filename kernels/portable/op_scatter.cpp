// aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
// aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
// aten::scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor
// aten::scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce)
//     -> Tensor
// args: [self, dim, index, src or value, (reduce,) out]
//
// out = self, then out[i][index[i][j][k]][k] = src[i][j][k] (dim = 1), or
// = value; with reduce "add" or "multiply", += or *= instead (integers wrap,
// bool is or / and). Any dtype; src has self's dtype, value is converted to
// it (as .to(), see select_convert). index int64 or int32 (util/scatter.h
// has the shape rules); an entry outside [0, self.size(dim)) fails at run
// (ExecutionFailed). Entries are applied in index order, so with repeats
// the last write wins (torch leaves that order unspecified but its CPU
// kernel does the same).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"
#include "kernels/portable/util/scatter.h"

namespace tern {
namespace portable {
namespace {

struct ScatterState {
  int32_t dim;
  uint8_t value[8];  // scatter.value(_reduce): the value in self's dtype
  bool multiply;     // scatter.(value_)reduce: "multiply", else "add"
};

// Writes elem bytes at each selected element of out: from src (scatter.src)
// or the state's value.
template <bool kFromSrc>
Error scatter_run(RunContext& ctx, EValue* const* args) {
  ScatterState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = args[2]->tensor;
  const Tensor* src = kFromSrc ? &args[3]->tensor : nullptr;
  const size_t elem = scalar_type_size(self.dtype);
  copy_bytes(args[4]->tensor.data, self.data, self.nbytes());
  auto* dst = static_cast<uint8_t*>(args[4]->tensor.data);
  const auto* from = kFromSrc ? static_cast<const uint8_t*>(src->data) : st.value;
  const int64_t bad = for_each_scatter_entry(self, st.dim, index, src, [&](int64_t at, int64_t s, int64_t) {
    memmove(dst + at * elem, from + s * elem, elem);
  });
  return bad < 0 ? Error::Ok : fail_scatter_index("aten::scatter", self, st.dim, index, bad);
}

// scatter.reduce, scatter.value_reduce: out[at] = out[at] + or * src[from]
// (or the state's value).
template <bool kFromSrc>
struct ScatterAccumulate {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    ScatterState st;
    memcpy(&st, ctx.state(), sizeof(st));
    const Tensor& self = args[0]->tensor;
    const Tensor& index = args[2]->tensor;
    Tensor& out = args[5]->tensor;
    copy_bytes(out.data, self.data, self.nbytes());
    T value;
    memcpy(&value, st.value, sizeof(T));
    const Tensor* src = kFromSrc ? &args[3]->tensor : nullptr;
    const T* from = kFromSrc ? src->data_as<const T>() : &value;
    T* d = out.data_as<T>();
    const int64_t bad = for_each_scatter_entry(self, st.dim, index, src, [&](int64_t at, int64_t s, int64_t) {
      d[at] = st.multiply ? scatter_prod(d[at], from[s]) : scatter_sum(d[at], from[s]);
    });
    return bad < 0 ? Error::Ok : fail_scatter_index("aten::scatter", self, st.dim, index, bad);
  }
};

// The Scalar `v` (Int, Double or Bool) as one element of dtype `to`.
Error scalar_bytes(PrepareContext& ctx, const EValue& v, ScalarType to, uint8_t* out) {
  const ScalarType from = v.is_double() ? ScalarType::Float64
                          : v.is_bool() ? ScalarType::Bool
                                        : ScalarType::Int64;
  const void* p = v.is_double() ? static_cast<const void*>(&v.d)
                  : v.is_bool() ? static_cast<const void*>(&v.b)
                                : static_cast<const void*>(&v.i);
  ConvertFn convert = select_convert(from, to);
  if (convert == nullptr) return fail_dtype(ctx, "self", to);
  convert(p, out, 1);
  return Error::Ok;
}

// scatter.reduce and scatter.value_reduce.
template <bool kFromSrc>
Error scatter_accumulate_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  if (!kFromSrc) TERN_CHECK_OK(expect_scalar(ctx, args, 3, "value"));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::String));
  ScatterState st{};
  int dim = 0;
  TERN_CHECK_OK(expect_scatter(ctx, args, kFromSrc, 5, &dim));
  st.dim = dim;
  const char* reduce = args[4]->str;
  st.multiply = strcmp(reduce, "multiply") == 0;
  if (!st.multiply && strcmp(reduce, "add") != 0) {
    return ctx.fail(Error::InvalidProgram, "reduce must be \"add\" or \"multiply\", got \"%s\"", reduce);
  }
  const ScalarType dtype = args[0]->tensor.dtype;
  if (!kFromSrc) TERN_CHECK_OK(scalar_bytes(ctx, *args[3], dtype, st.value));
  RunFn run = select_all<ScatterAccumulate<kFromSrc>>(dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", dtype);
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error scatter_src_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  ScatterState st{};
  int dim = 0;
  TERN_CHECK_OK(expect_scatter(ctx, args, /*has_src=*/true, 4, &dim));
  st.dim = dim;
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(scatter_run<true>);
  return Error::Ok;
}

Error scatter_value_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(expect_scalar(ctx, args, 3, "value"));
  ScatterState st{};
  int dim = 0;
  TERN_CHECK_OK(expect_scatter(ctx, args, /*has_src=*/false, 4, &dim));
  st.dim = dim;
  TERN_CHECK_OK(scalar_bytes(ctx, *args[3], args[0]->tensor.dtype, st.value));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(scatter_run<false>);
  return Error::Ok;
}

Error scatter_reduce_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return scatter_accumulate_prepare<true>(ctx, args);
}

Error scatter_value_reduce_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return scatter_accumulate_prepare<false>(ctx, args);
}

}  // namespace portable
}  // namespace tern
