// Quantization: the ops that PyTorch's PT2E flow (convert_pt2e) leaves in a
// graph, and Tern's packed-int4 form of one of them. They are the reference
// for quantized models: a float op between a dequantize and a quantize is
// what PyTorch itself runs for the converted model (docs/quantization.md).
// Each computes what the PyTorch implementation computes, in the same
// precision, so results match eager bit for bit on the same inputs.
//
// quantized_decomposed::quantize_per_tensor(Tensor input, float scale,
//     int zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor
//   args: [input, scale, zero_point, quant_min, quant_max, dtype, out]
//   out = clamp(round_half_even(input * float(1.0 / scale)) + zero_point,
//               quant_min, quant_max), in float32, converted to dtype
//   saturating, NaN -> 0 (quantize_one, to_quantized below).
// quantized_decomposed::quantize_per_tensor.tensor: scale and zero_point are
//   one-element tensors (float32 or float64; int64 or int32), read at run:
//   choose_qparams computes them from the data.
// quantized_decomposed::dequantize_per_tensor(Tensor input, float scale,
//     int zero_point, int quant_min, int quant_max, ScalarType dtype, *,
//     ScalarType? out_dtype=None) -> Tensor
//   args: [input, scale, zero_point, quant_min, quant_max, dtype, out_dtype, out]
//   out = (float(input) - zero_point) * float(scale), float32.
// quantized_decomposed::dequantize_per_tensor.tensor: as quantize's.
// quantized_decomposed::dequantize_per_channel(Tensor input, Tensor scales,
//     Tensor? zero_points, int axis, int quant_min, int quant_max,
//     ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor
//   args: [input, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype, out]
//   out[..c..] = float(input[..c..] - zero_points[c]) * scales[c].
// quantized_decomposed::choose_qparams.tensor(Tensor input, int quant_min,
//     int quant_max, float eps, ScalarType dtype) -> (Tensor, Tensor)
//   args: [input, quant_min, quant_max, eps, dtype, scale_out, zero_point_out]
//   The per-tensor affine parameters of the input's range widened to hold 0
//   (quant_min <= 0 <= quant_max, quant_min < quant_max, as eager checks):
//   scale = max((max - min) / (quant_max - quant_min), eps) in float32, as a
//   float64 [1]; zero_point = clamp(quant_min - round(min / scale)), int64 [1].
// torchao::dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale,
//     Tensor? zero_point, ScalarType input_dtype, SymInt? quant_min=None,
//     SymInt? quant_max=None, *, ScalarType output_dtype=float32) -> Tensor
//   args: [input, block_size, scale, zero_point, input_dtype, quant_min, quant_max, output_dtype, out]
//   Elements in one block (block_size[d] consecutive indices along each dim d)
//   share one scale and zero point: scale has sizes[d] / block_size[d]
//   elements along d (in any shape with that count, row-major).
//   out = (float(input) - float(zero_point)) * scale, float32.
// tern::dequantize_affine_int4(Tensor packed, int[] block_size, Tensor scale,
//     Tensor? zero_point, int quant_min, int quant_max) -> Tensor
//   args: [packed, block_size, scale, zero_point, quant_min, quant_max, out]
//   torchao::dequantize_affine of a tensor of 4-bit integers stored two per
//   byte along the last dim: element 2j in the low nibble of byte j, 2j+1 in
//   the high one; two's complement (-8..7) when quant_min < 0, else 0..15.
//   out has the packed sizes with the last one doubled; block_size is in
//   out's terms.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

constexpr int64_t kGrain = 1 << 14;

// The quantized dtypes and their value ranges.
bool quantized_range(ScalarType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case ScalarType::Int8: *lo = -128; *hi = 127; return true;
    case ScalarType::UInt8: *lo = 0; *hi = 255; return true;
    case ScalarType::Int16: *lo = -32768; *hi = 32767; return true;
    case ScalarType::Int32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    default: return false;
  }
}

// The dtype argument (an Int holding a ScalarType) `name`.
Error read_dtype(PrepareContext& ctx, const EValue& v, const char* name, ScalarType* out) {
  if (!v.is_int() || v.i < 0 || v.i >= kNumScalarTypes) {
    return ctx.fail(Error::InvalidProgram, "%s must be a dtype", name);
  }
  *out = static_cast<ScalarType>(v.i);
  return Error::Ok;
}

// quant_min and quant_max (args i, i + 1): ints with lo <= quant_min <=
// quant_max <= hi.
Error read_range(PrepareContext& ctx, Span<EValue* const> args, size_t i, int64_t lo, int64_t hi,
                 int64_t* qmin, int64_t* qmax) {
  if (!args[i]->is_int() || !args[i + 1]->is_int()) {
    return ctx.fail(Error::InvalidProgram, "quant_min and quant_max must be ints");
  }
  *qmin = args[i]->i;
  *qmax = args[i + 1]->i;
  if (*qmin > *qmax || *qmin < lo || *qmax > hi) {
    return ctx.fail(Error::InvalidProgram, "quant range [%lld, %lld] is not within [%lld, %lld]",
                    (long long)*qmin, (long long)*qmax, (long long)lo, (long long)hi);
  }
  return Error::Ok;
}

// The optional out_dtype argument: None or float32 (the only one with a kernel).
Error expect_float_out(PrepareContext& ctx, const EValue& v, const char* name) {
  if (v.is_none()) return Error::Ok;
  ScalarType t = ScalarType::Float32;
  TERN_CHECK_OK(read_dtype(ctx, v, name, &t));
  if (t != ScalarType::Float32) {
    return ctx.fail(Error::OperatorMissing, "%s %s: only float32 has a kernel", name, scalar_type_name(t));
  }
  return Error::Ok;
}

// A scale: a positive finite number (division by it must not blow up).
Error expect_scale(PrepareContext& ctx, double scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) {
    return ctx.fail(Error::InvalidProgram, "scale must be positive and finite, got %g", scale);
  }
  return Error::Ok;
}

// A one-element scale or zero point tensor, read at run.
double read_number(const Tensor& t) {
  switch (t.dtype) {
    case ScalarType::Float32: return *t.data_as<const float>();
    case ScalarType::Float64: return *t.data_as<const double>();
    case ScalarType::Int32: return *t.data_as<const int32_t>();
    case ScalarType::Int64: return static_cast<double>(*t.data_as<const int64_t>());
    default: return 0.0;
  }
}

Error expect_number(PrepareContext& ctx, const Tensor& t, const char* name, bool floating) {
  const bool ok = floating ? (t.dtype == ScalarType::Float32 || t.dtype == ScalarType::Float64)
                           : (t.dtype == ScalarType::Int32 || t.dtype == ScalarType::Int64);
  if (!ok) return fail_dtype(ctx, name, t.dtype);
  if (t.numel != 1) {
    return ctx.fail(Error::InvalidProgram, "%s must have one element, got %lld", name, (long long)t.numel);
  }
  return Error::Ok;
}

// scale and zero_point (args 1 and 2): numbers, given in *scale and
// *zero_point; or, with tensor_params, one-element tensors read at run.
Error read_qparams(PrepareContext& ctx, Span<EValue* const> args, bool tensor_params, double* scale,
                   int64_t* zero_point) {
  if (tensor_params) {
    TERN_CHECK_OK(ctx.expect_tensor(args, 1));
    TERN_CHECK_OK(ctx.expect_tensor(args, 2));
    TERN_CHECK_OK(expect_number(ctx, args[1]->tensor, "scale", true));
    return expect_number(ctx, args[2]->tensor, "zero_point", false);
  }
  if (!args[1]->is_double() && !args[1]->is_int()) return ctx.fail(Error::InvalidProgram, "scale must be a number");
  if (!args[2]->is_int()) return ctx.fail(Error::InvalidProgram, "zero_point must be an int");
  *scale = args[1]->to_double();
  *zero_point = args[2]->i;
  return Error::Ok;
}

// ---- quantize_per_tensor

struct QuantizeState {
  float inv_scale;  // float(1.0 / scale), what eager multiplies by
  float zero_point;
  float qmin, qmax;
};

// One element as eager computes it: round(x * inv_scale) + zero_point in
// float32 (round half to even, the default rounding mode), clamped.
inline float quantize_one(float x, float inv_scale, float zero_point, float qmin, float qmax) {
  float v = std::nearbyint(x * inv_scale) + zero_point;
  v = v < qmin ? qmin : v;  // NaN stays NaN, like eager's clamp
  return v > qmax ? qmax : v;
}

// A clamped float32 as Q, saturating at Q's range; NaN -> 0. The clamp is
// in float32, as eager's, but float(INT32_MAX) is 2^31, which int32 cannot
// hold: for int32 with quant_max 2^31 - 64 or more, a large input clamps to
// 2^31, and converting that (or a NaN) is undefined in C++. Eager's result
// is then the CPU's: INT32_MIN on x86 (the sign flips), INT32_MAX and 0 on
// aarch64. Here it is INT32_MAX and 0 on every CPU (as eager on aarch64; for
// NaN, as eager with the 8- and 16-bit dtypes on x86); where eager's result
// is defined, this is it.
template <typename Q>
inline Q to_quantized(float v) {
  constexpr float kMin = static_cast<float>(std::numeric_limits<Q>::min());  // 0 or -2^k: exact
  constexpr float kMax = static_cast<float>(std::numeric_limits<Q>::max());  // int32: 2^31, rounded up
  if (!(v == v)) return Q(0);
  if (v >= kMax) return std::numeric_limits<Q>::max();
  if (v <= kMin) return std::numeric_limits<Q>::min();
  return static_cast<Q>(v);
}

template <typename Q>
void quantize_range(const float* x, Q* q, int64_t begin, int64_t end, const QuantizeState& s) {
  for (int64_t i = begin; i < end; ++i) {
    q[i] = to_quantized<Q>(quantize_one(x[i], s.inv_scale, s.zero_point, s.qmin, s.qmax));
  }
}

template <typename Q, size_t kOut>
Error quantize_run(RunContext& ctx, EValue* const* args) {
  const QuantizeState& s = *static_cast<const QuantizeState*>(ctx.state());
  const float* x = args[0]->tensor.data_as<const float>();
  Q* q = args[kOut]->tensor.data_as<Q>();
  ctx.parallel_for(args[0]->tensor.numel, kGrain,
                   [&](RunContext&, int64_t b, int64_t e) { quantize_range(x, q, b, e, s); });
  return Error::Ok;
}

template <typename Q>
Error quantize_tensor_run(RunContext& ctx, EValue* const* args) {
  QuantizeState s = *static_cast<const QuantizeState*>(ctx.state());
  const double scale = read_number(args[1]->tensor);
  s.inv_scale = static_cast<float>(1.0 / scale);  // inf for a zero scale, as in eager
  s.zero_point = static_cast<float>(read_number(args[2]->tensor));
  const float* x = args[0]->tensor.data_as<const float>();
  Q* q = args[6]->tensor.data_as<Q>();
  ctx.parallel_for(args[0]->tensor.numel, kGrain,
                   [&](RunContext&, int64_t b, int64_t e) { quantize_range(x, q, b, e, s); });
  return Error::Ok;
}

Error quantize_prepare(PrepareContext& ctx, Span<EValue* const> args, bool tensor_params) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  const Tensor& x = args[0]->tensor;
  const Tensor& out = args[6]->tensor;
  if (x.dtype != ScalarType::Float32) return fail_dtype(ctx, "input", x.dtype);
  ScalarType dtype = ScalarType::Float32;
  TERN_CHECK_OK(read_dtype(ctx, *args[5], "dtype", &dtype));
  int64_t lo = 0, hi = 0, qmin = 0, qmax = 0;
  if (!quantized_range(dtype, &lo, &hi)) return fail_dtype(ctx, "dtype", dtype);
  TERN_CHECK_OK(read_range(ctx, args, 3, lo, hi, &qmin, &qmax));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", dtype));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", x.sizes, x.dim));
  QuantizeState s{};
  s.qmin = static_cast<float>(qmin);
  s.qmax = static_cast<float>(qmax);
  double scale = 1.0;
  int64_t zero_point = 0;
  TERN_CHECK_OK(read_qparams(ctx, args, tensor_params, &scale, &zero_point));
  if (!tensor_params) {
    TERN_CHECK_OK(expect_scale(ctx, scale));
    s.inv_scale = static_cast<float>(1.0 / scale);
    s.zero_point = static_cast<float>(zero_point);
  }
  memcpy(ctx.state(), &s, sizeof(s));
  switch (dtype) {
    case ScalarType::Int8: ctx.set_run(tensor_params ? quantize_tensor_run<int8_t> : quantize_run<int8_t, 6>); break;
    case ScalarType::UInt8: ctx.set_run(tensor_params ? quantize_tensor_run<uint8_t> : quantize_run<uint8_t, 6>); break;
    case ScalarType::Int16: ctx.set_run(tensor_params ? quantize_tensor_run<int16_t> : quantize_run<int16_t, 6>); break;
    default: ctx.set_run(tensor_params ? quantize_tensor_run<int32_t> : quantize_run<int32_t, 6>); break;
  }
  return Error::Ok;
}

// ---- dequantize_per_tensor

struct DequantizeState {
  float scale;
  float zero_point;
};

template <typename Q>
void dequantize_range(const Q* q, float* y, int64_t begin, int64_t end, float scale, float zero_point) {
  for (int64_t i = begin; i < end; ++i) y[i] = (static_cast<float>(q[i]) - zero_point) * scale;
}

template <typename Q, bool kTensorParams>
Error dequantize_run(RunContext& ctx, EValue* const* args) {
  DequantizeState s = *static_cast<const DequantizeState*>(ctx.state());
  if (kTensorParams) {
    s.scale = static_cast<float>(read_number(args[1]->tensor));
    s.zero_point = static_cast<float>(read_number(args[2]->tensor));
  }
  const Q* q = args[0]->tensor.data_as<const Q>();
  float* y = args[7]->tensor.data_as<float>();
  ctx.parallel_for(args[0]->tensor.numel, kGrain,
                   [&](RunContext&, int64_t b, int64_t e) { dequantize_range(q, y, b, e, s.scale, s.zero_point); });
  return Error::Ok;
}

template <bool kTensorParams>
RunFn dequantize_fn(ScalarType t) {
  switch (t) {
    case ScalarType::Int8: return dequantize_run<int8_t, kTensorParams>;
    case ScalarType::UInt8: return dequantize_run<uint8_t, kTensorParams>;
    case ScalarType::Int16: return dequantize_run<int16_t, kTensorParams>;
    case ScalarType::Int32: return dequantize_run<int32_t, kTensorParams>;
    default: return nullptr;
  }
}

// The input has the quantized dtype the op names.
Error expect_quantized_input(PrepareContext& ctx, Span<EValue* const> args, size_t dtype_arg, size_t range_arg) {
  const Tensor& x = args[0]->tensor;
  ScalarType dtype = ScalarType::Float32;
  TERN_CHECK_OK(read_dtype(ctx, *args[dtype_arg], "dtype", &dtype));
  int64_t lo = 0, hi = 0, qmin = 0, qmax = 0;
  if (!quantized_range(dtype, &lo, &hi)) return fail_dtype(ctx, "dtype", dtype);
  TERN_CHECK_OK(expect_dtype(ctx, x, "input", dtype));
  return read_range(ctx, args, range_arg, lo, hi, &qmin, &qmax);
}

Error dequantize_prepare(PrepareContext& ctx, Span<EValue* const> args, bool tensor_params) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& x = args[0]->tensor;
  const Tensor& out = args[7]->tensor;
  TERN_CHECK_OK(expect_quantized_input(ctx, args, 5, 3));
  TERN_CHECK_OK(expect_float_out(ctx, *args[6], "out_dtype"));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", ScalarType::Float32));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", x.sizes, x.dim));
  DequantizeState s{};
  double scale = 1.0;
  int64_t zero_point = 0;
  TERN_CHECK_OK(read_qparams(ctx, args, tensor_params, &scale, &zero_point));
  s.scale = static_cast<float>(scale);  // unused when tensor_params: read at run
  s.zero_point = static_cast<float>(zero_point);
  memcpy(ctx.state(), &s, sizeof(s));
  ctx.set_run(tensor_params ? dequantize_fn<true>(x.dtype) : dequantize_fn<false>(x.dtype));
  return Error::Ok;
}

// ---- dequantize_per_channel

struct PerChannelState {
  int64_t channels;
  int64_t inner;  // elements after the channel dim
};

// Parameter tensors' elements as float32 (zero points: exact for any
// quantized value; a float64 scale is rounded as eager's float32 result is).
inline float element_as_float(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case ScalarType::Float32: return t.data_as<const float>()[i];
    case ScalarType::Float64: return static_cast<float>(t.data_as<const double>()[i]);
    case ScalarType::Int8: return t.data_as<const int8_t>()[i];
    case ScalarType::UInt8: return t.data_as<const uint8_t>()[i];
    case ScalarType::Int16: return t.data_as<const int16_t>()[i];
    case ScalarType::Int32: return static_cast<float>(t.data_as<const int32_t>()[i]);
    case ScalarType::Int64: return static_cast<float>(t.data_as<const int64_t>()[i]);
    default: return 0.0f;
  }
}

template <typename Q>
Error dequantize_per_channel_run(RunContext& ctx, EValue* const* args) {
  const PerChannelState& s = *static_cast<const PerChannelState*>(ctx.state());
  const Tensor& scales = args[1]->tensor;
  const Tensor* zps = args[2]->is_tensor() ? &args[2]->tensor : nullptr;
  const Q* q = args[0]->tensor.data_as<const Q>();
  float* y = args[8]->tensor.data_as<float>();
  // rows of `inner` elements; row r is of channel r % channels
  const int64_t rows = s.inner == 0 ? 0 : args[0]->tensor.numel / s.inner;
  ctx.parallel_for(rows, grain_for(kGrain, {s.inner}), [&](RunContext&, int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t c = r % s.channels;
      const float scale = element_as_float(scales, c);
      const float zp = zps != nullptr ? element_as_float(*zps, c) : 0.0f;
      const Q* qr = q + r * s.inner;
      float* yr = y + r * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) yr[i] = (static_cast<float>(qr[i]) - zp) * scale;
    }
  });
  return Error::Ok;
}

Error expect_params(PrepareContext& ctx, const Tensor& t, const char* name, bool floating, int64_t count) {
  const bool ok = floating ? (t.dtype == ScalarType::Float32 || t.dtype == ScalarType::Float64)
                           : (t.dtype != ScalarType::Float16 && t.dtype != ScalarType::BFloat16 &&
                              t.dtype != ScalarType::Bool && t.dtype != ScalarType::Float64);
  if (!ok) return fail_dtype(ctx, name, t.dtype);
  if (t.numel != count) {
    return ctx.fail(Error::InvalidProgram, "%s must have %lld elements, got %lld", name, (long long)count,
                    (long long)t.numel);
  }
  return Error::Ok;
}

}  // namespace

Error quantize_per_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return quantize_prepare(ctx, args, false);
}

Error quantize_per_tensor_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return quantize_prepare(ctx, args, true);
}

Error dequantize_per_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return dequantize_prepare(ctx, args, false);
}

Error dequantize_per_tensor_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return dequantize_prepare(ctx, args, true);
}

Error dequantize_per_channel_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 9));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tensor(args, 8));
  const Tensor& x = args[0]->tensor;
  const Tensor& out = args[8]->tensor;
  TERN_CHECK_OK(expect_quantized_input(ctx, args, 6, 4));
  TERN_CHECK_OK(expect_float_out(ctx, *args[7], "out_dtype"));
  if (!args[3]->is_int()) return ctx.fail(Error::InvalidProgram, "axis must be an int");
  if (x.dim == 0) return ctx.fail(Error::InvalidProgram, "input must have a dim to take channels from");
  int axis;
  TERN_CHECK_OK(normalize_dim(ctx, args[3]->i, x.dim, "axis", &axis));
  PerChannelState s{x.sizes[axis], 1};
  for (int d = axis + 1; d < x.dim; ++d) s.inner *= x.sizes[d];  // within numel: no overflow
  TERN_CHECK_OK(expect_params(ctx, args[1]->tensor, "scales", true, s.channels));
  if (!args[2]->is_none()) {
    TERN_CHECK_OK(ctx.expect_tensor(args, 2));
    TERN_CHECK_OK(expect_params(ctx, args[2]->tensor, "zero_points", false, s.channels));
  }
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", ScalarType::Float32));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", x.sizes, x.dim));
  if (x.numel == 0) s.inner = 0;  // nothing to do; keeps the row count well defined
  memcpy(ctx.state(), &s, sizeof(s));
  switch (x.dtype) {
    case ScalarType::Int8: ctx.set_run(dequantize_per_channel_run<int8_t>); break;
    case ScalarType::UInt8: ctx.set_run(dequantize_per_channel_run<uint8_t>); break;
    case ScalarType::Int16: ctx.set_run(dequantize_per_channel_run<int16_t>); break;
    default: ctx.set_run(dequantize_per_channel_run<int32_t>); break;
  }
  return Error::Ok;
}

// ---- choose_qparams.tensor

namespace {

struct ChooseState {
  float eps;
  int64_t qmin = 0, qmax = 0;
};

Error choose_qparams_run(RunContext& ctx, EValue* const* args) {
  const ChooseState& s = *static_cast<const ChooseState*>(ctx.state());
  const Tensor& x = args[0]->tensor;
  const float* p = x.data_as<const float>();
  float lo = p[0], hi = p[0];
  for (int64_t i = 1; i < x.numel; ++i) {  // NaNs are skipped (eager's scale would be NaN)
    lo = p[i] < lo ? p[i] : lo;
    hi = p[i] > hi ? p[i] : hi;
  }
  const float min_neg = lo < 0.0f ? lo : 0.0f;
  const float max_pos = hi > 0.0f ? hi : 0.0f;
  float scale = (max_pos - min_neg) / static_cast<float>(static_cast<double>(s.qmax - s.qmin));
  scale = scale > s.eps ? scale : s.eps;
  const float shift = std::nearbyint(min_neg / scale);
  int64_t zp = s.qmin - static_cast<int64_t>(shift == shift ? shift : 0.0f);
  zp = zp < s.qmin ? s.qmin : zp > s.qmax ? s.qmax : zp;
  *args[5]->tensor.data_as<double>() = static_cast<double>(scale);
  *args[6]->tensor.data_as<int64_t>() = zp;
  return Error::Ok;
}

}  // namespace

Error choose_qparams_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  const Tensor& x = args[0]->tensor;
  if (x.dtype != ScalarType::Float32) return fail_dtype(ctx, "input", x.dtype);
  if (x.numel == 0) return ctx.fail(Error::InvalidProgram, "input is empty: it has no range");
  ScalarType dtype = ScalarType::Float32;
  TERN_CHECK_OK(read_dtype(ctx, *args[4], "dtype", &dtype));
  int64_t lo = 0, hi = 0;
  ChooseState s{};
  if (!quantized_range(dtype, &lo, &hi)) return fail_dtype(ctx, "dtype", dtype);
  TERN_CHECK_OK(read_range(ctx, args, 1, lo, hi, &s.qmin, &s.qmax));
  if (s.qmin > 0 || s.qmax < 0 || s.qmin == s.qmax) {  // eager refuses them too (and the scale would divide by 0)
    return ctx.fail(Error::InvalidProgram, "quant range [%lld, %lld] must hold 0 and more than one value",
                    (long long)s.qmin, (long long)s.qmax);
  }
  if (!args[3]->is_double() && !args[3]->is_int()) return ctx.fail(Error::InvalidProgram, "eps must be a number");
  const double eps = args[3]->to_double();
  if (!(eps > 0.0) || !std::isfinite(eps)) return ctx.fail(Error::InvalidProgram, "eps must be positive, got %g", eps);
  s.eps = static_cast<float>(eps);
  const int64_t one[1] = {1};
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "scale out", ScalarType::Float64));
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "scale out", one, 1));
  TERN_CHECK_OK(expect_dtype(ctx, args[6]->tensor, "zero_point out", ScalarType::Int64));
  TERN_CHECK_OK(expect_sizes(ctx, args[6]->tensor, "zero_point out", one, 1));
  memcpy(ctx.state(), &s, sizeof(s));
  ctx.set_run(choose_qparams_run);
  return Error::Ok;
}

// ---- dequantize_affine (block-wise) and its packed int4 form

namespace {

// Block geometry: for each dim, the block size and the stride of the
// parameter tensors (sizes[d] / block[d] blocks along d, row-major).
struct AffineState {
  int dim;
  bool int4, int4_signed;
  int64_t block[kMaxDims];
  int64_t param_stride[kMaxDims];
};

inline float unpack_int4(const uint8_t* packed, int64_t i, bool is_signed) {
  const uint8_t byte = packed[i >> 1];
  const int nibble = (i & 1) ? (byte >> 4) : (byte & 0xF);
  return static_cast<float>(is_signed && nibble >= 8 ? nibble - 16 : nibble);
}

template <typename Q>
Error dequantize_affine_run(RunContext& ctx, EValue* const* args) {
  const AffineState& s = **static_cast<AffineState* const*>(ctx.state());
  const size_t zp_arg = 3;
  const size_t out_arg = s.int4 ? 6 : 8;
  const Tensor& out = args[out_arg]->tensor;
  const Tensor& scale = args[2]->tensor;
  const Tensor* zp = args[zp_arg]->is_tensor() ? &args[zp_arg]->tensor : nullptr;
  const void* in = args[0]->tensor.data;
  float* y = out.data_as<float>();
  const int64_t inner = out.dim == 0 ? 1 : out.sizes[out.dim - 1];
  const int64_t rows = inner == 0 ? 0 : out.numel / inner;
  ctx.parallel_for(rows, grain_for(kGrain, {inner}), [&](RunContext&, int64_t b, int64_t e) {
    int64_t idx[kMaxDims];
    for (int64_t r = b; r < e; ++r) {
      // the row's index in every dim but the last, and its parameters' offset
      int64_t rest = r, base = 0;
      for (int d = s.dim - 2; d >= 0; --d) {
        idx[d] = rest % out.sizes[d];
        rest /= out.sizes[d];
        base += idx[d] / s.block[d] * s.param_stride[d];
      }
      const int64_t last = s.dim - 1;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t p = base + (last >= 0 ? i / s.block[last] * s.param_stride[last] : 0);
        const int64_t at = r * inner + i;
        const float q = s.int4 ? unpack_int4(static_cast<const uint8_t*>(in), at, s.int4_signed)
                               : static_cast<float>(static_cast<const Q*>(in)[at]);
        const float z = zp != nullptr ? element_as_float(*zp, p) : 0.0f;
        y[at] = (q - z) * element_as_float(scale, p);
      }
    }
  });
  return Error::Ok;
}

// Checks shared by both forms: block sizes divide out's sizes; scale and
// zero point have one element per block.
Error affine_prepare(PrepareContext& ctx, Span<EValue* const> args, const Tensor& out, AffineState* s) {
  const EValue& block = *args[1];
  if (block.tag != Tag::IntList || static_cast<int>(block.ints.size()) != out.dim) {
    return ctx.fail(Error::InvalidProgram, "block_size must list one int per dim (%d)", out.dim);
  }
  s->dim = out.dim;
  int64_t blocks = 1;
  for (int d = out.dim - 1; d >= 0; --d) {
    const int64_t b = block.ints[d];
    if (b < 1 || (out.sizes[d] % b) != 0) {
      return ctx.fail(Error::InvalidProgram, "block_size[%d] = %lld does not divide size %lld", d,
                      (long long)b, (long long)out.sizes[d]);
    }
    s->block[d] = b;
    s->param_stride[d] = blocks;
    blocks *= out.sizes[d] / b;  // at most numel: no overflow
  }
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  TERN_CHECK_OK(expect_params(ctx, args[2]->tensor, "scale", true, blocks));
  if (!args[3]->is_none()) {
    TERN_CHECK_OK(ctx.expect_tensor(args, 3));
    const Tensor& zp = args[3]->tensor;
    if (zp.dtype == ScalarType::Float32) {
      if (zp.numel != blocks) return expect_params(ctx, zp, "zero_point", true, blocks);
    } else {
      TERN_CHECK_OK(expect_params(ctx, zp, "zero_point", false, blocks));
    }
  }
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", ScalarType::Float32));
  return Error::Ok;
}

// The state is larger than PrepareContext's inline bytes: it lives in
// persistent memory and the inline state points to it.
Error keep_state(PrepareContext& ctx, const AffineState& s) {
  void* p = ctx.allocate(sizeof(AffineState));
  if (p == nullptr) return Error::OutOfMemory;
  memcpy(p, &s, sizeof(s));
  memcpy(ctx.state(), &p, sizeof(p));
  return Error::Ok;
}

}  // namespace

Error dequantize_affine_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 9));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 8));
  const Tensor& x = args[0]->tensor;
  const Tensor& out = args[8]->tensor;
  ScalarType dtype = ScalarType::Float32;
  TERN_CHECK_OK(read_dtype(ctx, *args[4], "input_dtype", &dtype));
  int64_t lo = 0, hi = 0;
  if (!quantized_range(dtype, &lo, &hi)) return fail_dtype(ctx, "input_dtype", dtype);
  TERN_CHECK_OK(expect_dtype(ctx, x, "input", dtype));
  if (!args[5]->is_none() || !args[6]->is_none()) {  // optional, and only checked
    int64_t qmin = 0, qmax = 0;
    TERN_CHECK_OK(read_range(ctx, args, 5, lo, hi, &qmin, &qmax));
  }
  if (!args[7]->is_none()) TERN_CHECK_OK(expect_float_out(ctx, *args[7], "output_dtype"));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", x.sizes, x.dim));
  AffineState s{};
  TERN_CHECK_OK(affine_prepare(ctx, args, out, &s));
  TERN_CHECK_OK(keep_state(ctx, s));
  switch (x.dtype) {
    case ScalarType::Int8: ctx.set_run(dequantize_affine_run<int8_t>); break;
    case ScalarType::UInt8: ctx.set_run(dequantize_affine_run<uint8_t>); break;
    case ScalarType::Int16: ctx.set_run(dequantize_affine_run<int16_t>); break;
    default: ctx.set_run(dequantize_affine_run<int32_t>); break;
  }
  return Error::Ok;
}

Error dequantize_affine_int4_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  const Tensor& packed = args[0]->tensor;
  const Tensor& out = args[6]->tensor;
  TERN_CHECK_OK(expect_dtype(ctx, packed, "packed", ScalarType::UInt8));
  if (packed.dim == 0) return ctx.fail(Error::InvalidProgram, "packed must have a dim to pack along");
  int64_t qmin = 0, qmax = 0;
  TERN_CHECK_OK(read_range(ctx, args, 4, -8, 15, &qmin, &qmax));
  if (qmin < 0 && qmax > 7) {
    return ctx.fail(Error::InvalidProgram, "quant range [%lld, %lld] fits neither int4 nor uint4",
                    (long long)qmin, (long long)qmax);
  }
  int64_t sizes[kMaxDims];
  for (int d = 0; d < packed.dim; ++d) sizes[d] = packed.sizes[d];
  sizes[packed.dim - 1] *= 2;  // out's numel is twice packed's, which the verifier bounded
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, packed.dim));
  AffineState s{};
  s.int4 = true;
  s.int4_signed = qmin < 0;
  TERN_CHECK_OK(affine_prepare(ctx, args, out, &s));
  TERN_CHECK_OK(keep_state(ctx, s));
  ctx.set_run(dequantize_affine_run<uint8_t>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
