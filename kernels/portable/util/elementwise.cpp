#include "kernels/portable/util/elementwise.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {

ElemInput elem_input(const EValue& v) {
  switch (v.tag) {
    case Tag::Tensor:
      return {v.tensor.data, v.tensor.dtype, v.tensor.dim, v.tensor.sizes, v.tensor.numel};
    case Tag::Int: return {&v.i, ScalarType::Int64, 0, nullptr, 1};
    case Tag::Double: return {&v.d, ScalarType::Float64, 0, nullptr, 1};
    default: return {&v.b, ScalarType::Bool, 0, nullptr, 1};
  }
}

bool elem_dtype_supported(ScalarType t) {
  return scalar_type_valid(static_cast<int>(t));
}

Error expect_elem_operand(PrepareContext& ctx, Span<EValue* const> args, size_t i,
                          const char* name, bool allow_scalar) {
  if (i >= args.size()) {
    return ctx.fail(Error::InvalidProgram, "argument %zu (%s) missing", i, name);
  }
  const EValue& v = *args[i];
  if (allow_scalar && v.is_scalar()) return Error::Ok;
  if (!v.is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "argument %zu (%s) must be a Tensor%s, got %s", i,
                    name, allow_scalar ? " or a Scalar" : "", tag_name(v.tag));
  }
  if (!elem_dtype_supported(v.tensor.dtype)) return fail_dtype(ctx, name, v.tensor.dtype);
  return Error::Ok;
}

Error expect_scalar(PrepareContext& ctx, Span<EValue* const> args, size_t i, const char* name) {
  if (i < args.size() && args[i]->is_scalar()) return Error::Ok;
  return ctx.fail(Error::InvalidProgram, "argument %zu (%s) must be an Int, Double or Bool", i,
                  name);
}

namespace {

template <typename T>
bool fits(const EValue& v) {
  if (v.is_bool() || !std::is_integral<T>::value) return true;  // floats may round or overflow to inf
  using L = std::numeric_limits<T>;
  if (v.is_double()) {
    // hi + 1 is exact (a power of two) even where hi itself is not a double.
    return v.d >= static_cast<double>(L::min()) && v.d < static_cast<double>(L::max()) + 1.0;
  }
  if (v.i < 0) return v.i >= static_cast<int64_t>(L::min());
  return static_cast<uint64_t>(v.i) <= static_cast<uint64_t>(L::max());
}

}  // namespace

bool elem_scalar_fits(const EValue& v, ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Int8: return fits<int8_t>(v);
    case ScalarType::UInt8: return fits<uint8_t>(v);
    case ScalarType::Int16: return fits<int16_t>(v);
    case ScalarType::Int32: return fits<int32_t>(v);
    case ScalarType::Int64: return fits<int64_t>(v);
    default: return true;
  }
}

Error expect_alpha(PrepareContext& ctx, const EValue& alpha, ScalarType result) {
  if (alpha.is_bool() && result != ScalarType::Bool) {
    return ctx.fail(Error::InvalidProgram, "a Bool alpha needs a bool result, not %s",
                    scalar_type_name(result));
  }
  if (alpha.is_double() && !scalar_type_is_floating(result)) {
    return ctx.fail(Error::InvalidProgram, "alpha %g must not be floating for a %s result", alpha.d,
                    scalar_type_name(result));
  }
  return Error::Ok;
}

Error expect_unary(PrepareContext& ctx, Span<EValue* const> args, size_t num_args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, num_args));
  TERN_CHECK_OK(expect_elem_operand(ctx, args, 0, "self", false));
  TERN_CHECK_OK(ctx.expect_tensor(args, num_args - 1));
  const Tensor& x = args[0]->tensor;
  return expect_sizes(ctx, args[num_args - 1]->tensor, "out", x.sizes, x.dim);
}

namespace {

// 0: bool, 1: integral, 2: floating.
int category(ScalarType t) {
  if (t == ScalarType::Bool) return 0;
  return scalar_type_is_floating(t) ? 2 : 1;
}

// Float ranks (f16, bf16 -> 1; f32 -> 2; f64 -> 3) and integer widths.
int float_rank(ScalarType t) {
  return t == ScalarType::Float64 ? 3 : t == ScalarType::Float32 ? 2 : 1;
}

bool is_unsigned(ScalarType t) { return t == ScalarType::UInt8; }

// "No operand in this tier"; never a valid dtype.
constexpr ScalarType kUndefined = static_cast<ScalarType>(-1);

ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == kUndefined) return b;
  if (b == kUndefined) return a;
  return promote_types(a, b);
}

// c10's combine_categories: the higher tier wins unless the lower one has a
// higher category.
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher != kUndefined && scalar_type_is_floating(higher)) return higher;
  if (higher == ScalarType::Bool || (lower != kUndefined && scalar_type_is_floating(lower))) {
    return promote_skip_undefined(higher, lower);
  }
  return higher != kUndefined ? higher : lower;
}

}  // namespace

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    int ra = float_rank(a), rb = float_rank(b);
    if (ra == 1 && rb == 1) return ScalarType::Float32;  // f16 with bf16
    return ra > rb ? a : b;
  }
  // Two different integral types.
  if (is_unsigned(a) || is_unsigned(b)) {
    ScalarType s = is_unsigned(a) ? b : a;  // the signed one
    return s == ScalarType::Int8 ? ScalarType::Int16 : s;
  }
  return scalar_type_size(a) > scalar_type_size(b) ? a : b;
}

ScalarType result_type(const EValue* const* operands, int n) {
  ScalarType dim_result = kUndefined, zero_result = kUndefined, wrapped_result = kUndefined;
  for (int k = 0; k < n; ++k) {
    const EValue& v = *operands[k];
    if (v.is_tensor()) {
      ScalarType& tier = v.tensor.dim > 0 ? dim_result : zero_result;
      tier = promote_skip_undefined(tier, v.tensor.dtype);
    } else {
      ScalarType t = v.is_double() ? ScalarType::Float32
                     : v.is_int()  ? ScalarType::Int64
                                   : ScalarType::Bool;
      wrapped_result = promote_skip_undefined(wrapped_result, t);
    }
  }
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}

// ---------------------------------------------------------------------------
// Softmax family

DimSplit dim_split(const Tensor& t, int dim) {
  DimSplit s = {1, 1, 1};
  for (int i = 0; i < t.dim; ++i) {
    int64_t& part = i < dim ? s.outer : i == dim ? s.size : s.inner;
    part *= t.sizes[i];
  }
  return s;
}

namespace {

// Columns of one [size, inner] slab handled together when dim is not the
// last: the running max and sum of kCols columns live on the stack, and the
// inner loops run along contiguous memory.
constexpr int64_t kCols = 64;

// y = softmax or log_softmax of each row of x: [rows, n], n >= 1. Computes
// in M = OpMath<T>; for the 16-bit types the exp terms are computed again in
// the last pass rather than read back rounded from y, so y is rounded once.
template <typename T, bool kLog>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n) {
  using M = OpMath<T>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    M mx = xr[0];
    for (int64_t i = 1; i < n; ++i) mx = M(xr[i]) > mx ? M(xr[i]) : mx;
    double sum = 0;  // exp terms are in (0, 1]: double keeps long rows exact enough
    for (int64_t i = 0; i < n; ++i) {
      M e = std::exp(M(xr[i]) - mx);
      if (!kLog && !kIsHalfType<T>) yr[i] = e;
      sum += e;
    }
    if (kLog) {
      M lse = static_cast<M>(std::log(sum));
      for (int64_t i = 0; i < n; ++i) yr[i] = (M(xr[i]) - mx) - lse;
    } else {
      M inv = static_cast<M>(1.0 / sum);
      for (int64_t i = 0; i < n; ++i) {
        yr[i] = (kIsHalfType<T> ? std::exp(M(xr[i]) - mx) : M(yr[i])) * inv;
      }
    }
  }
}

// Same along a middle dim: x is [size, inner] with element (d, c) at
// d * inner + c; handles columns [c0, c0 + w), w <= kCols.
template <typename T, bool kLog>
void softmax_cols(const T* x, T* y, int64_t size, int64_t inner, int64_t c0, int64_t w) {
  using M = OpMath<T>;
  M mx[kCols];
  double sum[kCols];
  for (int64_t j = 0; j < w; ++j) mx[j] = x[c0 + j], sum[j] = 0;
  for (int64_t d = 1; d < size; ++d) {
    const T* xd = x + d * inner + c0;
    for (int64_t j = 0; j < w; ++j) mx[j] = M(xd[j]) > mx[j] ? M(xd[j]) : mx[j];
  }
  for (int64_t d = 0; d < size; ++d) {
    const T* xd = x + d * inner + c0;
    T* yd = y + d * inner + c0;
    for (int64_t j = 0; j < w; ++j) {
      M e = std::exp(M(xd[j]) - mx[j]);
      if (!kLog && !kIsHalfType<T>) yd[j] = e;
      sum[j] += e;
    }
  }
  M last[kCols];  // log(sum) or 1 / sum
  for (int64_t j = 0; j < w; ++j) {
    last[j] = static_cast<M>(kLog ? std::log(sum[j]) : 1.0 / sum[j]);
  }
  for (int64_t d = 0; d < size; ++d) {
    const T* xd = x + d * inner + c0;
    T* yd = y + d * inner + c0;
    for (int64_t j = 0; j < w; ++j) {
      const M v = M(xd[j]) - mx[j];
      yd[j] = kLog ? v - last[j] : (kIsHalfType<T> ? std::exp(v) : M(yd[j])) * last[j];
    }
  }
}

template <bool kLog>
struct SoftmaxKernel {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    DimSplit s;
    memcpy(&s, ctx.state(), sizeof(s));
    const T* x = args[0]->tensor.data_as<T>();
    T* y = args[3]->tensor.data_as<T>();
    if (s.outer * s.size * s.inner == 0) return Error::Ok;
    if (s.inner == 1) {
      softmax_rows<T, kLog>(x, y, s.outer, s.size);
      return Error::Ok;
    }
    const int64_t slab = s.size * s.inner;
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t c0 = 0; c0 < s.inner; c0 += kCols) {
        int64_t w = s.inner - c0 < kCols ? s.inner - c0 : kCols;
        softmax_cols<T, kLog>(x + o * slab, y + o * slab, s.size, s.inner, c0, w);
      }
    }
    return Error::Ok;
  }
};

}  // namespace

Error softmax_family_prepare(PrepareContext& ctx, Span<EValue* const> args, bool log) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& x = args[0]->tensor;
  if (args[2]->b) {
    return ctx.fail(Error::OperatorMissing, "half_to_float=True is not supported (input is %s)",
                    scalar_type_name(x.dtype));
  }
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, x.dim, "dim", &dim));
  TERN_CHECK_OK(expect_same_shape(ctx, x, args[3]->tensor, "self", "out"));
  RunFn run = log ? select_floating<SoftmaxKernel<true>>(x.dtype)
                  : select_floating<SoftmaxKernel<false>>(x.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", x.dtype);
  DimSplit s = dim_split(x, dim);
  static_assert(sizeof(s) <= PrepareContext::kStateBytes, "DimSplit must fit the state");
  memmove(ctx.state(), &s, sizeof(s));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
