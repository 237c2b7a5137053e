// The payload reader (loader.h): header, values, the shared checks.
#include "backends/cpu/loader.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/core/overflow.h"
#include "runtime/core/size_expr.h"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kHeaderBytes = 16;  // "TCPU", u32 version, u64 flatbuffer size
// Version 2 added Attention, version 3 int8 values and QConv, Quantize,
// Dequantize, version 4 bool values (an Attention's mask), version 5 dynamic
// sizes and Winograd kernels transformed at load (Conv.winograd_element),
// version 6 BlockLinear (GGUF's block formats read in place); an older
// payload is a newer one without them.
constexpr uint32_t kVersion = 8;

// The most symbols and expressions a payload may have, and the largest size
// an expression may give (a delegate input's dims are at most 2^40).
constexpr uint32_t kMaxSymbols = 64;
constexpr uint32_t kMaxExprs = 4096;

}  // namespace

int64_t elements(std::initializer_list<int64_t> sizes) {
  uint64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0 || !checked_mul(n, uint64_t(s), &n) || n > (uint64_t(1) << 40)) return -1;
  }
  return int64_t(n);
}

int64_t window_out(int64_t in, int32_t k, int32_t s, int32_t p0, int32_t p1, int32_t d) {
  const int64_t span = in + int64_t(p0) + p1 - int64_t(d) * (k - 1) - 1;
  return span < 0 ? -1 : span / s + 1;
}

bool qparams_ok(float scale, int32_t zero_point) {
  return scale > 0.0f && std::isfinite(scale) && zero_point >= -128 && zero_point <= 127;
}

Error Loader::parse(Span<const uint8_t> p) {
  uint32_t version;
  uint64_t fb_size;
  TERN_CPU_CHECK(*this, p.size() >= kHeaderBytes, "the payload (%zu bytes) is not a cpu backend payload", p.size());
  TERN_CPU_CHECK(*this, memcmp(p.data(), "TCPU", 4) == 0, "the payload (%zu bytes) is not a cpu backend payload",
                 p.size());
  memcpy(&version, p.data() + 4, 4);
  memcpy(&fb_size, p.data() + 8, 8);
  // NotSupported: a payload of a newer exporter (or a damaged version field)
  TERN_CPU_CHECK_AS(*this, Error::NotSupported, version >= 1, "payload version %u, this runtime reads versions 1 to %u",
                    version, kVersion);
  TERN_CPU_CHECK_AS(*this, Error::NotSupported, version <= kVersion,
                    "payload version %u, this runtime reads versions 1 to %u", version, kVersion);
  uint64_t blob_start;
  TERN_CPU_CHECK(*this, fb_size <= p.size() - kHeaderBytes, "flatbuffer of %llu bytes overruns the %zu-byte payload",
                 (unsigned long long)fb_size, p.size());
  TERN_CPU_CHECK(*this, fb_size < FLATBUFFERS_MAX_BUFFER_SIZE, "flatbuffer of %llu bytes", (unsigned long long)fb_size);
  TERN_CPU_CHECK(*this, checked_add(kHeaderBytes + fb_size, 63, &blob_start), "flatbuffer of %llu bytes",
                 (unsigned long long)fb_size);
  blob_start &= ~uint64_t(63);
  flatbuffers::Verifier::Options options;
  options.max_depth = 16;
  flatbuffers::Verifier verifier(p.data() + kHeaderBytes, static_cast<size_t>(fb_size), options);
  TERN_CPU_CHECK(*this, fb::VerifyProgramBuffer(verifier), "malformed payload flatbuffer");
  prog = fb::GetProgram(p.data() + kHeaderBytes);
  TERN_CPU_CHECK(*this, prog->values() != nullptr, "payload without values");
  TERN_CPU_CHECK(*this, prog->ops() != nullptr, "payload without ops");
  blob = p.data() + (blob_start < p.size() ? blob_start : p.size());
  blob_bytes = blob_start < p.size() ? p.size() - blob_start : 0;
  return Error::Ok;
}

// The payload's inputs are the delegate's inputs (read only: they may be
// constants in the program's bytes); its outputs and the workspace are the
// delegate's outputs (planned memory).
Error Loader::check_args() {
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, inputs.size() == prog->num_inputs());
  TERN_CPU_NEED(failed, outputs.size() == uint64_t(prog->num_outputs()) + 1);
  if (failed) {
    return refuse(failed, "the delegate has %zu inputs and %zu outputs, the payload wants %u inputs and %u outputs "
                  "and the workspace", inputs.size(), outputs.size(), prog->num_inputs(), prog->num_outputs());
  }
  for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
    const bool input = i < inputs.size(), workspace = i + 1 == inputs.size() + outputs.size();
    const EValue& v = input ? *inputs[i] : *outputs[i - inputs.size()];
    const bool dtype_ok = v.tensor.dtype == ScalarType::Float32 || v.tensor.dtype == ScalarType::Int8 ||
                          (input && (v.tensor.dtype == ScalarType::Bool || v.tensor.dtype == ScalarType::UInt8));
    TERN_CPU_CHECK(*this, v.tag == Tag::Tensor, "delegate %s %zu must be a tensor", input ? "input" : "output",
                   input ? i : i - inputs.size());
    TERN_CPU_CHECK(*this, workspace || dtype_ok,
                   "delegate %s %zu must be a float32 or int8 tensor (or a bool or uint8 input)",
                   input ? "input" : "output", input ? i : i - inputs.size());
  }
  TERN_CPU_CHECK(*this, workspace().nbytes() >= prog->workspace_bytes(),
                 "the workspace has %zu bytes, the payload needs %llu", workspace().nbytes(),
                 (unsigned long long)prog->workspace_bytes());
  // A uint8 tensor may sit at any byte; the floats placed in it need their
  // alignment (the exporter's planner puts every tensor at a multiple of 64).
  TERN_CPU_CHECK(*this, prog->workspace_bytes() == 0 || reinterpret_cast<uintptr_t>(workspace().data) % 64 == 0,
                 "the workspace (delegate output %zu) is not 64-byte aligned", outputs.size() - 1);
  return Error::Ok;
}

// Sizes and element count of value vi (rank <= kMaxRank) at this call's
// expressions, and the byte count of its storage (its sizes' upper bounds).
Error Loader::read_shape(uint32_t vi, const fb::Value& v, ValueInfo* out, uint64_t* nbytes) {
  const auto* sizes = v.sizes();
  const auto* dyn = v.dyn_sizes();
  TERN_CPU_CHECK(*this, items_aligned(sizes), "value %u: misaligned sizes", vi);
  TERN_CPU_CHECK(*this, items_aligned(dyn), "value %u: misaligned dyn_sizes", vi);
  out->rank = sizes ? int(sizes->size()) : 0;
  TERN_CPU_CHECK(*this, out->rank <= kMaxRank, "value %u: rank %d over %d", vi, out->rank, kMaxRank);
  const bool has_dyn = dyn != nullptr && dyn->size() > 0;
  TERN_CPU_CHECK(*this, !has_dyn || dyn->size() == uint32_t(out->rank), "value %u: %u dyn_sizes for %d dims", vi,
                 dyn ? dyn->size() : 0, out->rank);
  // Every 0 taken as 1 (the span), the elements stay under 2^40: no product
  // of sizes overflows, even in an empty value.
  uint64_t capacity = 0, numel = 0;
  int bad = checked_span(out->rank, [&](int d) { return sizes->Get(uint32_t(d)); }, 1, uint64_t(1) << 40, &capacity);
  TERN_CPU_CHECK(*this, bad < 0, "value %u: bad or too large size in dim %d", vi, bad);
  out->dynamic = false;
  for (int d = 0; d < out->rank; ++d) {
    const int32_t e = has_dyn ? dyn->Get(uint32_t(d)) : -1;
    TERN_CPU_CHECK(*this, e < int64_t(num_exprs()), "value %u dim %d: expression %d of %u", vi, d, e, num_exprs());
    out->sizes[d] = e >= 0 ? exprs[e] : sizes->Get(uint32_t(d));
    out->dynamic = out->dynamic || e >= 0;
  }
  bad = checked_span(out->rank, [&](int d) { return out->sizes[d]; }, 1, uint64_t(1) << 40, &numel);
  TERN_CPU_CHECK(*this, bad < 0, "value %u: bad or too large size in dim %d at these input sizes", vi, bad);
  TERN_CPU_CHECK(*this, numel <= capacity, "value %u: %llu elements at these input sizes, %llu planned", vi,
                 (unsigned long long)numel, (unsigned long long)capacity);
  out->numel = int64_t(numel);
  out->capacity = int64_t(capacity);
  *nbytes = capacity * (out->int8 || out->boolean || out->uint8 ? 1 : sizeof(float));
  return Error::Ok;
}

Error Loader::resolve_value(uint32_t vi) {
  const fb::Value& v = *prog->values()->Get(vi);
  ValueInfo& out = values[vi];
  out = ValueInfo{};
  uint64_t nbytes = 0, end = 0;
  TERN_CPU_CHECK(*this, int(v.dtype()) >= 0, "value %u: unknown dtype %d", vi, int(v.dtype()));
  TERN_CPU_CHECK(*this, v.dtype() <= fb::DType::UInt8, "value %u: unknown dtype %d", vi, int(v.dtype()));
  out.int8 = v.dtype() == fb::DType::Int8;
  out.boolean = v.dtype() == fb::DType::Bool;
  out.uint8 = v.dtype() == fb::DType::UInt8;
  const ScalarType dtype = out.int8      ? ScalarType::Int8
                           : out.boolean ? ScalarType::Bool
                           : out.uint8   ? ScalarType::UInt8
                                         : ScalarType::Float32;
  TERN_CHECK_OK(read_shape(vi, v, &out, &nbytes));
  const uint32_t ni = prog->num_inputs(), no = prog->num_outputs();
  switch (v.storage()) {
    case fb::Storage::Input:
    case fb::Storage::Output: {
      const bool input = v.storage() == fb::Storage::Input;
      TERN_CPU_CHECK(*this, v.index() < (input ? ni : no), "value %u: %s %u out of range", vi,
                     input ? "input" : "output", v.index());
      const Tensor& t = (input ? inputs : outputs)[v.index()]->tensor;
      // the same elements, possibly seen with other sizes (a [m, k] input read as [m, 1, 1, k])
      TERN_CPU_CHECK(*this, out.numel == t.numel, "value %u: %lld elements, delegate %s %u has %lld", vi,
                     (long long)out.numel, input ? "input" : "output", v.index(), (long long)t.numel);
      TERN_CPU_CHECK(*this, t.dtype == dtype, "value %u: %s, delegate %s %u is %s", vi, scalar_type_name(dtype),
                     input ? "input" : "output", v.index(), scalar_type_name(t.dtype));
      out.data = t.data_as<float>();
      out.writable = !input;
      return Error::Ok;
    }
    case fb::Storage::Workspace:
      TERN_CPU_CHECK(*this, v.offset() % (out.int8 || out.boolean || out.uint8 ? 1 : alignof(float)) == 0,
                     "value %u: workspace offset %llu", vi, (unsigned long long)v.offset());
      TERN_CPU_CHECK(*this, checked_add(v.offset(), nbytes, &end), "value %u: workspace range [%llu, +%llu)", vi,
                     (unsigned long long)v.offset(), (unsigned long long)nbytes);
      TERN_CPU_CHECK(*this, end <= prog->workspace_bytes(),
                     "value %u: workspace range [%llu, +%llu) outside %llu bytes", vi, (unsigned long long)v.offset(),
                     (unsigned long long)nbytes, (unsigned long long)prog->workspace_bytes());
      out.data = reinterpret_cast<float*>(static_cast<uint8_t*>(workspace().data) + v.offset());
      out.writable = true;
      return Error::Ok;
    case fb::Storage::Weights:
      TERN_CPU_CHECK(*this, !out.dynamic, "value %u: weights of dynamic sizes", vi);
      TERN_CPU_CHECK(*this, v.offset() % 64 == 0, "value %u: weights at %llu", vi, (unsigned long long)v.offset());
      TERN_CPU_CHECK(*this, checked_add(v.offset(), nbytes, &end), "value %u: weights [%llu, +%llu)", vi,
                     (unsigned long long)v.offset(), (unsigned long long)nbytes);
      TERN_CPU_CHECK(*this, end <= blob_bytes, "value %u: weights [%llu, +%llu) outside the %llu-byte blob", vi,
                     (unsigned long long)v.offset(), (unsigned long long)nbytes, (unsigned long long)blob_bytes);
      out.data = const_cast<float*>(reinterpret_cast<const float*>(blob + v.offset()));
      out.writable = false;
      out.constant = true;
      return Error::Ok;
  }
  return ctx.fail(Error::InvalidProgram, "value %u: unknown storage %d", vi, int(v.storage()));
}

Error Loader::resolve_values() {
  const uint32_t n = prog->values()->size();
  values = static_cast<ValueInfo*>(ctx.allocate(sizeof(ValueInfo) * (n ? n : 1)));
  if (values == nullptr) return Error::OutOfMemory;
  for (uint32_t i = 0; i < n; ++i) TERN_CHECK_OK(resolve_value(i));
  return Error::Ok;
}

Error Loader::resolve_dynamic_values() {
  for (uint32_t i = 0; i < prog->values()->size(); ++i) {
    if (values[i].dynamic) TERN_CHECK_OK(resolve_value(i));
  }
  return Error::Ok;
}

Error Loader::check_dynamic() {
  const auto* syms = prog->symbols();
  const auto* code = prog->exprs();
  const uint32_t ns = syms ? syms->size() : 0, ne = code ? code->size() : 0;
  TERN_CPU_CHECK(*this, ns <= kMaxSymbols, "%u symbols, at most %u", ns, kMaxSymbols);
  TERN_CPU_CHECK(*this, ne <= kMaxExprs, "%u size expressions, at most %u", ne, kMaxExprs);
  for (uint32_t i = 0; i < ns; ++i) {
    const fb::Symbol& sym = *syms->Get(i);
    TERN_CPU_CHECK(*this, sym.input() < inputs.size(), "symbol %u: input %u of %zu", i, sym.input(), inputs.size());
    TERN_CPU_CHECK(*this, int64_t(sym.dim()) < int64_t(inputs[sym.input()]->tensor.dim),
                   "symbol %u: dim %u of input %u, which has %d", i, sym.dim(), sym.input(),
                   int(inputs[sym.input()]->tensor.dim));
  }
  for (uint32_t i = 0; i < ne; ++i) {
    const auto* c = code->Get(i)->code();
    const char* failed = nullptr;
    TERN_CPU_NEED(failed, c != nullptr);
    TERN_CPU_NEED(failed, items_aligned(c));
    TERN_CPU_NEED(failed, c->size() % 2 == 0);
    if (failed) return refuse(failed, "size expression %u is malformed", i);
    const char* why = "";
    TERN_CPU_CHECK(*this, size_expr_valid(c->data(), c->size() / 2, ns, &why), "size expression %u: %s", i, why);
  }
  symbols = static_cast<int64_t*>(ctx.allocate(sizeof(int64_t) * (ns ? ns : 1)));
  exprs = static_cast<int64_t*>(ctx.allocate(sizeof(int64_t) * (ne ? ne : 1)));
  if (symbols == nullptr || exprs == nullptr) return Error::OutOfMemory;
  return Error::Ok;
}

Error Loader::evaluate() {
  for (uint32_t i = 0; i < num_symbols(); ++i) {
    const fb::Symbol& sym = *prog->symbols()->Get(i);
    symbols[i] = inputs[sym.input()]->tensor.sizes[sym.dim()];
  }
  for (uint32_t i = 0; i < num_exprs(); ++i) {
    const auto* c = prog->exprs()->Get(i)->code();
    TERN_CPU_CHECK(*this, eval_size_expr(c->data(), c->size() / 2, symbols, &exprs[i]),
                   "size expression %u overflows or divides by zero at these input sizes", i);
    // an expression's value is a size: in [0, 2^40], as the symbols are
    TERN_CPU_CHECK(*this, exprs[i] >= 0, "size expression %u is %lld at these input sizes", i, (long long)exprs[i]);
    TERN_CPU_CHECK(*this, exprs[i] <= (int64_t(1) << 40), "size expression %u is %lld at these input sizes", i,
                   (long long)exprs[i]);
  }
  return Error::Ok;
}

void* Loader::allocate(size_t bytes) {
  CpuOp* op = current;
  if (reshaping) {  // reshape_cpu_program set current: never nullptr here
    if (op->next_block >= op->num_blocks) {
      ctx.fail(Error::MemoryTooSmall, "%s allocates more blocks at these input sizes than at load", op->label);
      return nullptr;
    }
    const OpBlock& block = op->blocks[op->next_block++];
    if (bytes > block.bytes) {
      ctx.fail(Error::MemoryTooSmall, "%s needs a block of %zu bytes at these input sizes, %zu at load", op->label,
               bytes, block.bytes);
      return nullptr;
    }
    return block.data;
  }
  void* p = ctx.allocate(bytes);
  if (p != nullptr && op != nullptr) {
    if (op->num_blocks < kMaxOpBlocks) {
      op->blocks[op->num_blocks++] = OpBlock{p, bytes};
    } else {
      op->replayable = false;
    }
  }
  return p;
}

Error Loader::field(uint32_t oi, const flatbuffers::Vector<int32_t>* e, uint32_t slot, int64_t stored, int64_t* out) {
  const int32_t ei = e != nullptr && slot < e->size() ? e->Get(slot) : -1;
  TERN_CPU_CHECK(*this, ei < int64_t(num_exprs()), "op %u: size field %u has expression %d of %u", oi, slot, ei,
                 num_exprs());
  if (ei >= 0 && current != nullptr) current->dynamic = true;
  *out = ei >= 0 ? exprs[ei] : stored;
  return Error::Ok;
}
Error Loader::value_of(uint32_t oi, int64_t vi, int rank, bool out, bool int8, const ValueInfo** v) {
  TERN_CPU_CHECK(*this, vi >= 0, "op %u: value %lld out of range", oi, (long long)vi);
  TERN_CPU_CHECK(*this, uint64_t(vi) < prog->values()->size(), "op %u: value %lld out of range", oi, (long long)vi);
  *v = &values[vi];
  const char* is = (*v)->int8 ? "int8" : (*v)->boolean ? "bool" : (*v)->uint8 ? "uint8" : "float32";
  TERN_CPU_CHECK(*this, (*v)->int8 == int8, "op %u: value %lld is %s, the op takes %s there", oi, (long long)vi, is,
                 int8 ? "int8" : "float32");
  TERN_CPU_CHECK(*this, !(*v)->boolean, "op %u: value %lld is %s, the op takes %s there", oi, (long long)vi, is,
                 int8 ? "int8" : "float32");
  TERN_CPU_CHECK(*this, !(*v)->uint8, "op %u: value %lld is %s, the op takes %s there", oi, (long long)vi, is,
                 int8 ? "int8" : "float32");
  TERN_CPU_CHECK(*this, rank == 0 || (*v)->rank == rank, "op %u: value %lld must be %d-d", oi, (long long)vi, rank);
  TERN_CPU_CHECK(*this, !out || (*v)->writable, "op %u: writes value %lld, which is read-only", oi, (long long)vi);
  mark(**v);
  return Error::Ok;
}

Error Loader::mask_value(uint32_t oi, int64_t vi, const ValueInfo** v) {
  TERN_CPU_CHECK(*this, vi >= 0, "op %u: value %lld out of range", oi, (long long)vi);
  TERN_CPU_CHECK(*this, uint64_t(vi) < prog->values()->size(), "op %u: value %lld out of range", oi, (long long)vi);
  *v = &values[vi];
  TERN_CPU_CHECK(*this, !(*v)->int8, "op %u: value %lld is int8, the op takes bool or float32 there", oi,
                 (long long)vi);
  TERN_CPU_CHECK(*this, !(*v)->uint8, "op %u: value %lld is uint8, the op takes bool or float32 there", oi,
                 (long long)vi);
  mark(**v);
  return Error::Ok;
}

Error Loader::constant_of(uint32_t oi, int64_t vi, int rank, bool int8, const char* what, const ValueInfo** v) {
  TERN_CHECK_OK(value_of(oi, vi, rank, false, int8, v));
  TERN_CPU_CHECK(*this, (*v)->constant, "op %u: its %s (value %lld) must be in the payload's weights, not in "
                 "planned memory", oi, what, (long long)vi);
  return Error::Ok;
}

Error Loader::bytes_of(uint32_t oi, int64_t vi, int rank, const char* what, const ValueInfo** v) {
  TERN_CPU_CHECK(*this, vi >= 0, "op %u: value %lld out of range", oi, (long long)vi);
  TERN_CPU_CHECK(*this, uint64_t(vi) < prog->values()->size(), "op %u: value %lld out of range", oi, (long long)vi);
  if (!values[vi].uint8) return constant_of(oi, vi, rank, true, what, v);
  *v = &values[vi];
  TERN_CPU_CHECK(*this, (*v)->rank == rank, "op %u: value %lld must be %d-d", oi, (long long)vi, rank);
  mark(**v);
  return Error::Ok;
}

Error Loader::disjoint(uint32_t oi, const ValueInfo& x, const ValueInfo& y) {
  const uintptr_t x0 = reinterpret_cast<uintptr_t>(x.data), y0 = reinterpret_cast<uintptr_t>(y.data);
  const uintptr_t xn = uintptr_t(x.numel) * (x.int8 ? 1 : sizeof(float)), yn = uintptr_t(y.numel) * (y.int8 ? 1 : sizeof(float));
  const bool apart = xn == 0 || yn == 0 || x0 >= y0 + yn || y0 >= x0 + xn;
  TERN_CPU_CHECK(*this, apart, "op %u: its output overlaps its input, which this op does not allow", oi);
  return Error::Ok;
}

Error Loader::sizes(uint32_t oi, const CpuOp& op, const char* what, std::initializer_list<NamedSize> sizes,
                    int64_t limit) {
  for (const NamedSize& s : sizes) {
    const char* failed = nullptr;
    TERN_CPU_NEED(failed, s.value >= 1);
    TERN_CPU_NEED(failed, s.value < limit);
    if (failed) {
      return refuse(failed, "op %u (%s): %s (%s = %lld, each size in [1, %lld))", oi, op.nodes, what, s.name,
                    (long long)s.value, (long long)limit);
    }
  }
  return Error::Ok;
}

Error Loader::pair(uint32_t oi, const flatbuffers::Vector<int32_t>* v, const char* what, int32_t lo, int32_t* a, int32_t* b) {
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, v != nullptr);
  TERN_CPU_NEED(failed, v->size() == 2);
  TERN_CPU_NEED(failed, v->Get(0) >= lo);
  TERN_CPU_NEED(failed, v->Get(1) >= lo);
  TERN_CPU_NEED(failed, v->Get(0) <= (1 << 16));
  TERN_CPU_NEED(failed, v->Get(1) <= (1 << 16));
  if (failed) return refuse(failed, "op %u: %s must be 2 ints in [%d, 65536]", oi, what, lo);
  *a = v->Get(0), *b = v->Get(1);
  return Error::Ok;
}

Error Loader::epilogue(uint32_t oi, fb::Activation a, float lo, float hi, Epilogue* ep) {
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, int(a) >= 0);
  TERN_CPU_NEED(failed, a <= fb::Activation::Silu);
  TERN_CPU_NEED(failed, !std::isnan(lo));
  TERN_CPU_NEED(failed, !std::isnan(hi));
  TERN_CPU_NEED(failed, lo <= hi);
  if (failed) return refuse(failed, "op %u: bad activation %d [%g, %g]", oi, int(a), lo, hi);
  ep->activation = static_cast<Activation>(a);
  ep->clamp = {lo, hi};
  ep->vact = isa.vact;
  return Error::Ok;
}

Error Loader::quantization(uint32_t oi, const CpuOp& op, float x_scale, int32_t x_zero, float y_scale, int32_t y_zero,
                           bool y_inverse, int32_t qmin, int32_t qmax) {
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, qparams_ok(x_scale, x_zero));
  TERN_CPU_NEED(failed, qparams_ok(y_scale, y_zero));
  TERN_CPU_NEED(failed, qrange_ok(qmin, qmax));
  if (failed) {
    return refuse(failed, "op %u (%s): bad quantization (scales %g, %s%g; zero points %d, %d; range [%d, %d])", oi,
                  op.nodes, double(x_scale), y_inverse ? "1/" : "", double(y_scale), x_zero, y_zero, qmin, qmax);
  }
  return Error::Ok;
}

Error Loader::refuse(const char* cond, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const Error e = vrefuse(Error::InvalidProgram, cond, fmt, ap);
  va_end(ap);
  return e;
}

Error Loader::refuse_as(Error error, const char* cond, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const Error e = vrefuse(error, cond, fmt, ap);
  va_end(ap);
  return e;
}

Error Loader::vrefuse(Error error, const char* cond, const char* fmt, va_list ap) {
  char what[320];
  vsnprintf(what, sizeof(what), fmt, ap);
  return ctx.fail(error, "%s (needs %s)", what, cond);
}

// "Conv: convolution_3+relu_2" (kind, then the nodes it covers), kept for the
// method's life: what profiles and traces show.
Error Loader::make_label(const fb::Op& o, CpuOp* op) {
  const int k = static_cast<int>(o.kind_type());
  const char* kind = k > 0 && k < int(kCpuOpKinds) ? fb::EnumNameOpKind(o.kind_type()) : "op";
  const size_t n = strlen(kind) + 2 + strlen(op->nodes) + 1;
  char* label = static_cast<char*>(ctx.allocate(n));
  if (label == nullptr) return Error::OutOfMemory;
  snprintf(label, n, op->nodes[0] ? "%s: %s" : "%s%s", kind, op->nodes);
  op->label = label;
  return Error::Ok;
}

Error Loader::begin_op(uint32_t oi, CpuOp* op) {
  const fb::Op& o = *prog->ops()->Get(oi);
  *op = CpuOp();
  op->replayable = true;
  current = op;
  op->nodes = o.nodes() ? o.nodes()->c_str() : "";
  TERN_CHECK_OK(make_label(o, op));
  TERN_CPU_CHECK(*this, o.kind() != nullptr, "op %u: kind %d without a table", oi, int(o.kind_type()));
  const size_t k = size_t(o.kind_type());
  TERN_CPU_CHECK(*this, k >= 1, "op %u: unknown kind %d", oi, int(o.kind_type()));
  TERN_CPU_CHECK(*this, k < kCpuOpKinds, "op %u: unknown kind %d", oi, int(o.kind_type()));
  op->kind = CpuOpKind(k);
  const int32_t out = o.out();
  TERN_CPU_CHECK(*this, out >= -1, "op %u: out value %d is not a value (or -1)", oi, int(out));
  TERN_CPU_CHECK(*this, int64_t(out) < int64_t(prog->values()->size()), "op %u: out value %d is not a value (of %u)",
                 oi, int(out), prog->values()->size());
  op->out = out >= 0 ? &values[out] : nullptr;
  op->out_nhwc = o.out_nhwc();
  return Error::Ok;
}

}  // namespace cpu
}  // namespace tern
