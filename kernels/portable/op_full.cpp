// aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None,
//            Device? device=None, bool? pin_memory=None) -> Tensor
// aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None,
//                 Layout? layout=None, Device? device=None, bool? pin_memory=None,
//                 MemoryFormat? memory_format=None) -> Tensor
// args (full):      [size, fill_value, dtype, layout, device, pin_memory, out]
// args (full_like): [self, fill_value, dtype, layout, device, pin_memory, memory_format, out]
//
// Fills out with fill_value converted to out's dtype at load, as torch
// converts it: checked for overflow (300 does not fit uint8; -1 wraps to 255
// as torch allows), a double truncated toward zero for an integer dtype, != 0
// for bool. Without dtype, full infers it from the Scalar (Int -> int64,
// Double -> float32, Bool -> bool) and full_like takes self's.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

typedef uint16_t __attribute__((may_alias)) Bits16;
typedef uint32_t __attribute__((may_alias)) Bits32;
typedef uint64_t __attribute__((may_alias)) Bits64;

struct FillState {
  uint64_t bits;  // the value's bytes in out's dtype (low bytes)
};

template <typename U, size_t kOut>
Error fill_run(RunContext& ctx, EValue* const* args) {
  Tensor& out = args[kOut]->tensor;
  U value;
  memcpy(&value, &static_cast<const FillState*>(ctx.state())->bits, sizeof(U));
  if constexpr (sizeof(U) == 1) {
    memset(out.data, value, static_cast<size_t>(out.numel));
  } else {
    U* p = static_cast<U*>(out.data);
    for (int64_t i = 0; i < out.numel; ++i) p[i] = value;
  }
  return Error::Ok;
}

// v as an integer of type T, if it fits (unsigned T also takes negatives
// down to -max, wrapping, as torch does).
template <typename T>
bool scalar_to_int(const EValue& v, T* out) {
  using L = std::numeric_limits<T>;
  int64_t x;
  if (v.is_double()) {
    const double t = std::trunc(v.d);
    // [-2^63, 2^63): NaN fails both comparisons.
    if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return false;
    x = static_cast<int64_t>(t);
  } else {
    x = v.is_int() ? v.i : (v.b ? 1 : 0);
  }
  const bool fits = L::is_signed ? (x >= int64_t(L::min()) && x <= int64_t(L::max()))
                                 : (x >= -int64_t(L::max()) && (x < 0 || uint64_t(x) <= L::max()));
  if (!fits) return false;
  *out = static_cast<T>(x);
  return true;
}

template <typename T>
bool scalar_to(const EValue& v, uint64_t* bits) {
  T value;
  if constexpr (std::is_same_v<T, bool>) {
    value = v.to_double() != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    const double x = v.is_int() ? static_cast<double>(v.i) : v.to_double();
    if (std::isfinite(x) && std::fabs(x) > double(std::numeric_limits<T>::max())) return false;
    value = static_cast<T>(x);
  } else if (!scalar_to_int(v, &value)) {
    return false;
  }
  *bits = 0;
  memcpy(bits, &value, sizeof(T));
  return true;
}

// Converts the fill value, then picks the run by element size.
template <size_t kOut>
Error prepare_fill(PrepareContext& ctx, const EValue& value, ScalarType dtype) {
  if (!value.is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "fill_value must be a Scalar, got %s",
                    tag_name(value.tag));
  }
  FillState state;
  bool ok = false;
  switch (dtype) {
    case ScalarType::Float32: ok = scalar_to<float>(value, &state.bits); break;
    case ScalarType::Float64: ok = scalar_to<double>(value, &state.bits); break;
    case ScalarType::Int8: ok = scalar_to<int8_t>(value, &state.bits); break;
    case ScalarType::UInt8: ok = scalar_to<uint8_t>(value, &state.bits); break;
    case ScalarType::Int16: ok = scalar_to<int16_t>(value, &state.bits); break;
    case ScalarType::Int32: ok = scalar_to<int32_t>(value, &state.bits); break;
    case ScalarType::Int64: ok = scalar_to<int64_t>(value, &state.bits); break;
    case ScalarType::Bool: ok = scalar_to<bool>(value, &state.bits); break;
    default: return fail_dtype(ctx, "out", dtype);
  }
  if (!ok) {
    return ctx.fail(Error::InvalidProgram, "fill_value %g does not fit %s", value.to_double(),
                    scalar_type_name(dtype));
  }
  memcpy(ctx.state(), &state, sizeof(state));
  switch (scalar_type_size(dtype)) {
    case 1: ctx.set_run(fill_run<uint8_t, kOut>); break;
    case 2: ctx.set_run(fill_run<Bits16, kOut>); break;
    case 4: ctx.set_run(fill_run<Bits32, kOut>); break;
    default: ctx.set_run(fill_run<Bits64, kOut>); break;
  }
  return Error::Ok;
}

ScalarType inferred_dtype(const EValue& value) {
  return value.is_bool() ? ScalarType::Bool : value.is_int() ? ScalarType::Int64 : ScalarType::Float32;
}

}  // namespace

Error full_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  Span<const int64_t> size = args[0]->ints;
  if (size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu dims, at most %d", size.size(), kMaxDims);
  }
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[2], "dtype", inferred_dtype(*args[1]), &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[6]->tensor, "out", size.data(), static_cast<int>(size.size())));
  TERN_CHECK_OK(expect_dtype(ctx, args[6]->tensor, "out", dtype));
  return prepare_fill<6>(ctx, *args[1], dtype);
}

Error full_like_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[2], "dtype", self.dtype, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[7]->tensor, "out", self.sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[7]->tensor, "out", dtype));
  return prepare_fill<7>(ctx, *args[1], dtype);
}

}  // namespace portable
}  // namespace tern
