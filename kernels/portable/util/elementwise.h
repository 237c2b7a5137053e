// Elementwise helpers shared by the arithmetic, comparison and activation
// kernels: reading inputs of any supported dtype converted to the type an op
// computes in, torch's type promotion (for prepare's out-dtype checks), and
// picking a run function per dtype without macros.
//
// Inputs are read in chunks of kElemChunk elements: an input already in the
// compute type is used in place; any other dtype is converted into a stack
// buffer first. The op's inner loop then sees plain `const T*` arrays (or one
// broadcast value) and vectorizes, and the conversions stay out of the op's
// templates (one op instantiation per compute type, not per input-dtype pair).
//
//   template <typename T>
//   Error sigmoid_run(RunContext&, EValue* const* args) {
//     unary_map<T>(args[0]->tensor, args[1]->tensor.data_as<T>(),
//                  [](T x) { return T(1) / (T(1) + std::exp(-x)); });
//     return Error::Ok;
//   }
//
// Everything here is allocation-free and safe to call from run. The prepare
// helpers (expect_*, result_type) log through the PrepareContext.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// Elements converted per step; the stack buffers are kElemChunk * sizeof(T).
constexpr int64_t kElemChunk = 256;

// ---------------------------------------------------------------------------
// Inputs

// One input of an elementwise op as run reads it: a contiguous tensor, or an
// ATen Scalar argument (an Int, Double or Bool EValue, e.g. the literal `2` in
// `aten::add.Tensor(x, 2)` as torch.export writes it) viewed as a 0-d tensor
// of int64 / float64 / bool whose one element is the EValue's own storage.
struct ElemInput {
  const void* data;
  ScalarType dtype;
  int32_t dim;
  const int64_t* sizes;  // dim entries (unused when dim == 0)
  int64_t numel;
};

// `v` must be a Tensor or a Scalar (prepare checked). The view lives as long as `v`.
ElemInput elem_input(const EValue& v);

// Dtypes the elementwise kernels read: every ScalarType (float16 and bfloat16
// as Half / BFloat16, half.h).
bool elem_dtype_supported(ScalarType t);

// prepare: args[i] is a Tensor of a supported dtype, or (if allow_scalar) an
// Int/Double/Bool Scalar. `name` is the schema's argument name, for the log.
Error expect_elem_operand(PrepareContext& ctx, Span<EValue* const> args, size_t i,
                          const char* name, bool allow_scalar);

// prepare: args[i] is an Int, Double or Bool (an ATen Scalar).
Error expect_scalar(PrepareContext& ctx, Span<EValue* const> args, size_t i, const char* name);

// prepare: a Scalar argument converts to dtype without overflow (e.g. a
// Double limit 1e10 for an int8 tensor is rejected, as torch does).
bool elem_scalar_fits(const EValue& v, ScalarType dtype);

// prepare: ATen's alpha_check for add/sub: a Bool alpha needs a Bool result,
// and an integral or Bool result needs an integral (Int or Bool) alpha.
Error expect_alpha(PrepareContext& ctx, const EValue& alpha, ScalarType result);

// prepare for a unary op: args has num_args entries, args[0] is a Tensor of a
// supported dtype and the last one a Tensor with its sizes (dtype unchecked).
Error expect_unary(PrepareContext& ctx, Span<EValue* const> args, size_t num_args);

// ---------------------------------------------------------------------------
// Type promotion (torch.result_type), for prepare's out-dtype checks.

// torch.promote_types: bool < integers < floating; u8 with i8 -> i16;
// f16 with bf16 -> f32.
ScalarType promote_types(ScalarType a, ScalarType b);

// torch.result_type of elementwise operands (Tensors or Scalars). Tensors
// with dims outrank 0-d tensors, which outrank Scalars, unless a lower tier
// has a higher category (bool < integral < floating); a floating Scalar
// counts as float32 (the default dtype), an Int as int64. n >= 1.
ScalarType result_type(const EValue* const* operands, int n);

// Result dtype of a unary floating op (sigmoid, tanh, ...) on t: t if it is
// floating, else float32 (torch's int-to-float promotion).
inline ScalarType unary_float_result(ScalarType t) {
  return scalar_type_is_floating(t) ? t : ScalarType::Float32;
}

// ---------------------------------------------------------------------------
// Integer arithmetic that wraps on overflow (as torch's does in practice)
// instead of being undefined behaviour; other types compute as usual. A
// hostile input must not be able to trigger UB in run.

template <typename T>
using WrapType = typename std::make_unsigned<typename std::common_type<T, int>::type>::type;

template <typename T>
constexpr bool kWraps = std::is_integral<T>::value && !std::is_same<T, bool>::value;

template <typename T>
inline T wrap_add(T a, T b) {
  if constexpr (kWraps<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  } else {
    return a + b;
  }
}

template <typename T>
inline T wrap_sub(T a, T b) {
  if constexpr (kWraps<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
  } else {
    return a - b;
  }
}

template <typename T>
inline T wrap_mul(T a, T b) {
  if constexpr (kWraps<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  } else {
    return a * b;
  }
}

// ---------------------------------------------------------------------------
// Conversion

namespace detail {

template <typename T, typename S>
inline void convert_loop(const void* base, int64_t offset, int64_t n, T* dst) {
  const S* src = static_cast<const S*>(base) + offset;
  for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<T>(static_cast<OpMath<S>>(src[j]));
}

// Bool is stored as one byte; read it as uint8_t so a hostile byte other than
// 0/1 is still a defined value (nonzero = true).
template <typename T>
inline void convert_bool_loop(const void* base, int64_t offset, int64_t n, T* dst) {
  const uint8_t* src = static_cast<const uint8_t*>(base) + offset;
  for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<T>(src[j] != 0);
}

}  // namespace detail

// Element `i` of an array of `dtype`, converted to T. dtype is supported.
template <typename T>
inline T elem_load(const void* base, ScalarType dtype, int64_t i) {
  switch (dtype) {
    case ScalarType::Float32: return static_cast<T>(static_cast<const float*>(base)[i]);
    case ScalarType::Float64: return static_cast<T>(static_cast<const double*>(base)[i]);
    case ScalarType::Float16: return static_cast<T>(static_cast<float>(static_cast<const Half*>(base)[i]));
    case ScalarType::BFloat16: return static_cast<T>(static_cast<float>(static_cast<const BFloat16*>(base)[i]));
    case ScalarType::Int8: return static_cast<T>(static_cast<const int8_t*>(base)[i]);
    case ScalarType::UInt8: return static_cast<T>(static_cast<const uint8_t*>(base)[i]);
    case ScalarType::Int16: return static_cast<T>(static_cast<const int16_t*>(base)[i]);
    case ScalarType::Int32: return static_cast<T>(static_cast<const int32_t*>(base)[i]);
    case ScalarType::Int64: return static_cast<T>(static_cast<const int64_t*>(base)[i]);
    case ScalarType::Bool: return static_cast<T>(static_cast<const uint8_t*>(base)[i] != 0);
    default: return T();
  }
}

// dst[0..n) = elements [offset, offset + n) of an array of `dtype`, as T.
template <typename T>
void elem_convert(const void* base, ScalarType dtype, int64_t offset, int64_t n, T* dst) {
  switch (dtype) {
    case ScalarType::Float32: return detail::convert_loop<T, float>(base, offset, n, dst);
    case ScalarType::Float64: return detail::convert_loop<T, double>(base, offset, n, dst);
    case ScalarType::Float16: return detail::convert_loop<T, Half>(base, offset, n, dst);
    case ScalarType::BFloat16: return detail::convert_loop<T, BFloat16>(base, offset, n, dst);
    case ScalarType::Int8: return detail::convert_loop<T, int8_t>(base, offset, n, dst);
    case ScalarType::UInt8: return detail::convert_loop<T, uint8_t>(base, offset, n, dst);
    case ScalarType::Int16: return detail::convert_loop<T, int16_t>(base, offset, n, dst);
    case ScalarType::Int32: return detail::convert_loop<T, int32_t>(base, offset, n, dst);
    case ScalarType::Int64: return detail::convert_loop<T, int64_t>(base, offset, n, dst);
    case ScalarType::Bool: return detail::convert_bool_loop<T>(base, offset, n, dst);
    default: return;
  }
}

// An ATen Scalar argument (Int, Double or Bool EValue) as T. An Int is read
// from its int64 so large values are exact in integer ops.
template <typename T>
inline T elem_scalar(const EValue& v) {
  if (v.tag == Tag::Int) return static_cast<T>(v.i);
  if (v.tag == Tag::Double) return static_cast<T>(v.d);
  return static_cast<T>(v.b);
}

// n elements of an input as T: either `p[0..n)` or, when `scalar`, the one
// value `s` for every position.
template <typename T>
struct ElemChunk {
  const T* p;
  T s;
  bool scalar;
};

// Elements [offset, offset + n) of `in` (stride 1), or the element at
// `offset` repeated (stride 0), as T. Uses `buf` (kElemChunk) only to convert.
template <typename T>
inline ElemChunk<T> elem_chunk(const ElemInput& in, int64_t offset, int64_t stride, int64_t n,
                               T* buf) {
  if (stride == 0) return {nullptr, elem_load<T>(in.data, in.dtype, offset), true};
  if (in.dtype == ScalarTypeOf<T>::value && !std::is_same<T, bool>::value) {
    return {static_cast<const T*>(in.data) + offset, T(), false};
  }
  elem_convert(in.data, in.dtype, offset, n, buf);
  return {buf, T(), false};
}

// As elem_chunk, but a repeated element is written out to `buf`, so the
// result is always an array (for ops with several broadcast inputs).
template <typename T>
inline const T* elem_chunk_array(const ElemInput& in, int64_t offset, int64_t stride, int64_t n,
                                 T* buf) {
  ElemChunk<T> c = elem_chunk(in, offset, stride, n, buf);
  if (!c.scalar) return c.p;
  for (int64_t j = 0; j < n; ++j) buf[j] = c.s;
  return buf;
}

// True if some element of `in`, converted to T, equals v (e.g. a zero
// divisor before an integer division).
template <typename T>
bool elem_any_equal(const ElemInput& in, T v) {
  T buf[kElemChunk];
  for (int64_t i = 0; i < in.numel; i += kElemChunk) {
    int64_t n = in.numel - i < kElemChunk ? in.numel - i : kElemChunk;
    ElemChunk<T> c = elem_chunk(in, i, 1, n, buf);
    for (int64_t j = 0; j < n; ++j) {
      if (c.p[j] == v) return true;
    }
  }
  return false;
}

// out[i] = op(in[i] as T) for every element of `in` (out has in's numel).
template <typename T, typename R, typename Op>
void unary_map(const Tensor& in, R* out, const Op& op) {
  ElemInput x = {in.data, in.dtype, in.dim, in.sizes, in.numel};
  T buf[kElemChunk];
  for (int64_t i = 0; i < in.numel; i += kElemChunk) {
    int64_t n = in.numel - i < kElemChunk ? in.numel - i : kElemChunk;
    const T* p = elem_chunk(x, i, 1, n, buf).p;
    R* o = out + i;
    for (int64_t j = 0; j < n; ++j) o[j] = op(p[j]);
  }
}

// ---------------------------------------------------------------------------
// Picking a run function by dtype.
//
// K is a struct with `template <typename T> static Error run(RunContext&,
// EValue* const*)`; each selector returns K::run<T> for the C++ type of `t`
// if t is in its set, else nullptr (prepare then fails with fail_dtype).
// Only the types of the chosen set are instantiated.

// float16 / bfloat16 run as K::run<Half> / K::run<BFloat16>: the kernel
// computes in OpMath<T> (float) and rounds once when it stores a T (half.h).
template <typename K>
RunFn select_floating(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return K::template run<float>;
    case ScalarType::Float64: return K::template run<double>;
    case ScalarType::Float16: return K::template run<Half>;
    case ScalarType::BFloat16: return K::template run<BFloat16>;
    default: return nullptr;
  }
}

// The integral types (not bool).
template <typename K>
RunFn select_integer(ScalarType t) {
  switch (t) {
    case ScalarType::Int8: return K::template run<int8_t>;
    case ScalarType::UInt8: return K::template run<uint8_t>;
    case ScalarType::Int16: return K::template run<int16_t>;
    case ScalarType::Int32: return K::template run<int32_t>;
    case ScalarType::Int64: return K::template run<int64_t>;
    default: return nullptr;
  }
}

// Floating and integral types (not bool).
template <typename K>
RunFn select_real(ScalarType t) {
  RunFn run = select_integer<K>(t);
  return run != nullptr ? run : select_floating<K>(t);
}

// The integral types and bool (the bitwise ops).
template <typename K>
RunFn select_integral(ScalarType t) {
  if (t == ScalarType::Bool) return K::template run<bool>;
  return select_integer<K>(t);
}

// Every supported type, bool included.
template <typename K>
RunFn select_all(ScalarType t) {
  if (t == ScalarType::Bool) return K::template run<bool>;
  return select_real<K>(t);
}

// ---------------------------------------------------------------------------
// Softmax family (aten::_softmax, aten::_log_softmax): shared by op_softmax.cpp
// and op_log_softmax.cpp, which differ only in the last step.

// A tensor's sizes seen around one dim: [outer, size, inner].
struct DimSplit {
  int64_t outer;
  int64_t size;
  int64_t inner;
};

DimSplit dim_split(const Tensor& t, int dim);

// prepare for both ops: args = [self, dim, half_to_float, out]; self is
// float32/float64, out matches it, half_to_float is false. Stores the
// DimSplit in ctx.state() and sets the run function.
Error softmax_family_prepare(PrepareContext& ctx, Span<EValue* const> args, bool log);

}  // namespace portable
}  // namespace tern
