#include "kernels/portable/util/half.h"
#include "kernels/portable/util/fill.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

typedef uint16_t __attribute__((may_alias)) Bits16;
typedef uint32_t __attribute__((may_alias)) Bits32;
typedef uint64_t __attribute__((may_alias)) Bits64;

struct FillState {
  uint64_t bits;  // the value's bytes in out's dtype (low bytes)
  size_t out;     // index of the out tensor in args
};

template <typename U>
Error fill_run(RunContext& ctx, EValue* const* args) {
  FillState state;
  memcpy(&state, ctx.state(), sizeof(state));
  Tensor& out = args[state.out]->tensor;
  U value;
  memcpy(&value, &state.bits, sizeof(U));
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
  } else if constexpr (kIsFloat<T>) {
    const double x = v.is_int() ? static_cast<double>(v.i) : v.to_double();
    if (std::isfinite(x) && std::fabs(x) > double(std::numeric_limits<T>::max())) return false;
    value = static_cast<T>(x);
  } else if (!scalar_to_int(v, &value)) {
    return false;
  }
  *bits = 0;
  memmove(bits, &value, sizeof(T));
  return true;
}

}  // namespace

Error prepare_fill(PrepareContext& ctx, const EValue& value, ScalarType dtype, size_t out) {
  if (!value.is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "the fill value must be a Scalar, got %s",
                    tag_name(value.tag));
  }
  FillState state;
  state.out = out;
  bool ok = false;
  switch (dtype) {
    case ScalarType::Float32: ok = scalar_to<float>(value, &state.bits); break;
    case ScalarType::Float64: ok = scalar_to<double>(value, &state.bits); break;
    case ScalarType::Float16: ok = scalar_to<Half>(value, &state.bits); break;
    case ScalarType::BFloat16: ok = scalar_to<BFloat16>(value, &state.bits); break;
    case ScalarType::Int8: ok = scalar_to<int8_t>(value, &state.bits); break;
    case ScalarType::UInt8: ok = scalar_to<uint8_t>(value, &state.bits); break;
    case ScalarType::Int16: ok = scalar_to<int16_t>(value, &state.bits); break;
    case ScalarType::Int32: ok = scalar_to<int32_t>(value, &state.bits); break;
    case ScalarType::Int64: ok = scalar_to<int64_t>(value, &state.bits); break;
    case ScalarType::Bool: ok = scalar_to<bool>(value, &state.bits); break;
    default: return fail_dtype(ctx, "out", dtype);
  }
  if (!ok) {
    return ctx.fail(Error::InvalidProgram, "the fill value %g does not fit %s", value.to_double(),
                    scalar_type_name(dtype));
  }
  static_assert(sizeof(state) <= PrepareContext::kStateBytes, "FillState must fit the state");
  memmove(ctx.state(), &state, sizeof(state));
  switch (scalar_type_size(dtype)) {
    case 1: ctx.set_run(fill_run<uint8_t>); break;
    case 2: ctx.set_run(fill_run<Bits16>); break;
    case 4: ctx.set_run(fill_run<Bits32>); break;
    default: ctx.set_run(fill_run<Bits64>); break;
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
