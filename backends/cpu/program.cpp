#include "backends/cpu/program.h"

#include <cmath>
#include <initializer_list>
#include <cstdio>
#include <cstring>

#include "backends/cpu/schema/cpu_generated.h"
#include "runtime/core/overflow.h"

namespace tern {
namespace cpu {
namespace {

namespace fb = ::tern::backends::cpu::fb;

constexpr size_t kHeaderBytes = 16;  // "TCPU", u32 version, u64 flatbuffer size
// Version 2 added Attention, version 3 int8 values and QConv, Quantize,
// Dequantize; an older payload is a newer one without them.
constexpr uint32_t kVersion = 3;
constexpr int kMaxRank = 8;

// The product of sizes read from the payload, or -1 when it overflows or
// passes 2^40 elements (more than any value may hold, read_shape): compared
// with a value's element count, -1 never matches.
int64_t elements(std::initializer_list<int64_t> sizes) {
  uint64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0 || !checked_mul(n, uint64_t(s), &n) || n > (uint64_t(1) << 40)) return -1;
  }
  return int64_t(n);
}

struct ValueInfo {
  float* data;  // int8 values: their bytes, through this pointer's type
  bool int8;    // cpu.fbs DType Int8, else Float32
  int rank;
  int64_t sizes[kMaxRank];
  int64_t numel;
  bool writable;
  bool constant;  // in the payload's weights: bytes the file holds, the same at load and at every run
};

// Everything load_cpu_program builds, while it builds it.
struct Loader {
  PrepareContext& ctx;
  Span<EValue* const> inputs;
  Span<EValue* const> outputs;  // the payload's outputs, then the workspace
  const Isa& isa;
  const Qs8Kernels& qs8;
  const fb::Program* prog = nullptr;
  const uint8_t* blob = nullptr;
  uint64_t blob_bytes = 0;
  ValueInfo* values = nullptr;
  size_t scratch = 0;
  int64_t zero_floats = 1;  // the zeros padding reads: the most any op needs

  Error parse(Span<const uint8_t> p) {
    uint32_t version;
    uint64_t fb_size;
    if (p.size() < kHeaderBytes || memcmp(p.data(), "TCPU", 4) != 0) {
      return ctx.fail(Error::InvalidProgram, "the payload (%zu bytes) is not a cpu backend payload", p.size());
    }
    memcpy(&version, p.data() + 4, 4);
    memcpy(&fb_size, p.data() + 8, 8);
    if (version < 1 || version > kVersion) {
      return ctx.fail(Error::NotSupported, "payload version %u, this runtime reads versions 1 to %u", version, kVersion);
    }
    uint64_t blob_start;
    if (fb_size > p.size() - kHeaderBytes || fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE ||
        !checked_add(kHeaderBytes + fb_size, 63, &blob_start)) {
      return ctx.fail(Error::InvalidProgram, "flatbuffer of %llu bytes overruns the %zu-byte payload",
                      (unsigned long long)fb_size, p.size());
    }
    blob_start &= ~uint64_t(63);
    flatbuffers::Verifier::Options options;
    options.max_depth = 16;
    flatbuffers::Verifier verifier(p.data() + kHeaderBytes, static_cast<size_t>(fb_size), options);
    if (!fb::VerifyProgramBuffer(verifier)) return ctx.fail(Error::InvalidProgram, "malformed payload flatbuffer");
    prog = fb::GetProgram(p.data() + kHeaderBytes);
    if (!prog->values() || !prog->ops()) return ctx.fail(Error::InvalidProgram, "payload without values or ops");
    blob = p.data() + (blob_start < p.size() ? blob_start : p.size());
    blob_bytes = blob_start < p.size() ? p.size() - blob_start : 0;
    return Error::Ok;
  }

  // The payload's inputs are the delegate's inputs (read only: they may be
  // constants in the program's bytes); its outputs and the workspace are the
  // delegate's outputs (planned memory).
  Error check_args() {
    if (inputs.size() != prog->num_inputs() || outputs.size() != uint64_t(prog->num_outputs()) + 1) {
      return ctx.fail(Error::InvalidProgram, "the delegate has %zu inputs and %zu outputs, the payload wants %u "
                      "inputs and %u outputs and the workspace", inputs.size(), outputs.size(), prog->num_inputs(),
                      prog->num_outputs());
    }
    for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
      const bool input = i < inputs.size(), workspace = i + 1 == inputs.size() + outputs.size();
      const EValue& v = input ? *inputs[i] : *outputs[i - inputs.size()];
      const bool dtype_ok = v.tensor.dtype == ScalarType::Float32 || v.tensor.dtype == ScalarType::Int8;
      if (v.tag != Tag::Tensor || (!workspace && !dtype_ok)) {
        return ctx.fail(Error::InvalidProgram, "delegate %s %zu must be a %s tensor", input ? "input" : "output",
                        input ? i : i - inputs.size(), workspace ? "workspace" : "float32 or int8");
      }
    }
    if (workspace().nbytes() < prog->workspace_bytes()) {
      return ctx.fail(Error::InvalidProgram, "the workspace has %zu bytes, the payload needs %llu",
                      workspace().nbytes(), (unsigned long long)prog->workspace_bytes());
    }
    // A uint8 tensor may sit at any byte; the floats placed in it need their
    // alignment (the exporter's planner puts every tensor at a multiple of 64).
    if (prog->workspace_bytes() > 0 && reinterpret_cast<uintptr_t>(workspace().data) % 64 != 0) {
      return ctx.fail(Error::InvalidProgram, "the workspace (delegate output %zu) is not 64-byte aligned",
                      outputs.size() - 1);
    }
    return Error::Ok;
  }

  const Tensor& workspace() const { return outputs[outputs.size() - 1]->tensor; }

  // Sizes, element count and byte count of value vi (rank <= kMaxRank).
  Error read_shape(uint32_t vi, const fb::Value& v, ValueInfo* out, uint64_t* nbytes) {
    const auto* sizes = v.sizes();
    if (!items_aligned(sizes)) return ctx.fail(Error::InvalidProgram, "value %u: misaligned sizes", vi);
    out->rank = sizes ? int(sizes->size()) : 0;
    if (out->rank > kMaxRank) return ctx.fail(Error::InvalidProgram, "value %u: rank %d over %d", vi, out->rank, kMaxRank);
    // Every 0 taken as 1 (the span), the elements stay under 2^40: no product
    // of sizes overflows, even in an empty value.
    uint64_t numel = 0;
    const int bad = checked_span(out->rank, [&](int d) { return sizes->Get(uint32_t(d)); }, 1, uint64_t(1) << 40, &numel);
    if (bad >= 0) return ctx.fail(Error::InvalidProgram, "value %u: bad or too large size in dim %d", vi, bad);
    for (int d = 0; d < out->rank; ++d) out->sizes[d] = sizes->Get(uint32_t(d));
    out->numel = int64_t(numel);
    *nbytes = numel * (out->int8 ? 1 : sizeof(float));
    return Error::Ok;
  }

  Error resolve_value(uint32_t vi) {
    const fb::Value& v = *prog->values()->Get(vi);
    ValueInfo& out = values[vi];
    out = ValueInfo{};
    uint64_t nbytes = 0, end = 0;
    if (v.dtype() != fb::DType::Float32 && v.dtype() != fb::DType::Int8) {
      return ctx.fail(Error::InvalidProgram, "value %u: unknown dtype %d", vi, int(v.dtype()));
    }
    out.int8 = v.dtype() == fb::DType::Int8;
    TERN_CHECK_OK(read_shape(vi, v, &out, &nbytes));
    const uint32_t ni = prog->num_inputs(), no = prog->num_outputs();
    switch (v.storage()) {
      case fb::Storage::Input:
      case fb::Storage::Output: {
        const bool input = v.storage() == fb::Storage::Input;
        if (v.index() >= (input ? ni : no)) return ctx.fail(Error::InvalidProgram, "value %u: %s %u out of range", vi, input ? "input" : "output", v.index());
        const Tensor& t = (input ? inputs : outputs)[v.index()]->tensor;
        // the same elements, possibly seen with other sizes (a [m, k] input read as [m, 1, 1, k])
        if (out.numel != t.numel) {
          return ctx.fail(Error::InvalidProgram, "value %u: %lld elements, delegate %s %u has %lld", vi,
                          (long long)out.numel, input ? "input" : "output", v.index(), (long long)t.numel);
        }
        if (t.dtype != (out.int8 ? ScalarType::Int8 : ScalarType::Float32)) {
          return ctx.fail(Error::InvalidProgram, "value %u: %s, delegate %s %u is %s", vi, out.int8 ? "int8" : "float32",
                          input ? "input" : "output", v.index(), scalar_type_name(t.dtype));
        }
        out.data = t.data_as<float>();
        out.writable = !input;
        return Error::Ok;
      }
      case fb::Storage::Workspace:
        if (v.offset() % (out.int8 ? 1 : alignof(float)) != 0 || !checked_add(v.offset(), nbytes, &end) ||
            end > prog->workspace_bytes()) {
          return ctx.fail(Error::InvalidProgram, "value %u: workspace range [%llu, +%llu) outside %llu bytes", vi,
                          (unsigned long long)v.offset(), (unsigned long long)nbytes, (unsigned long long)prog->workspace_bytes());
        }
        out.data = reinterpret_cast<float*>(static_cast<uint8_t*>(workspace().data) + v.offset());
        out.writable = true;
        return Error::Ok;
      case fb::Storage::Weights:
        if (v.offset() % 64 != 0 || !checked_add(v.offset(), nbytes, &end) || end > blob_bytes) {
          return ctx.fail(Error::InvalidProgram, "value %u: weights [%llu, +%llu) outside the %llu-byte blob or misaligned",
                          vi, (unsigned long long)v.offset(), (unsigned long long)nbytes, (unsigned long long)blob_bytes);
        }
        out.data = const_cast<float*>(reinterpret_cast<const float*>(blob + v.offset()));
        out.writable = false;
        out.constant = true;
        return Error::Ok;
    }
    return ctx.fail(Error::InvalidProgram, "value %u: unknown storage %d", vi, int(v.storage()));
  }

  Error resolve_values() {
    const uint32_t n = prog->values()->size();
    values = static_cast<ValueInfo*>(ctx.allocate(sizeof(ValueInfo) * (n ? n : 1)));
    if (values == nullptr) return Error::OutOfMemory;
    for (uint32_t i = 0; i < n; ++i) TERN_CHECK_OK(resolve_value(i));
    return Error::Ok;
  }

  // Float32 value `vi` of op `oi`: in range, `rank` dims (0: any), writable
  // if `out`. Every op reads and writes float32 values through this, but
  // those that take int8 (value_of).
  Error value(uint32_t oi, int64_t vi, int rank, bool out, const ValueInfo** v) {
    return value_of(oi, vi, rank, out, false, v);
  }

  // The same, for a value of dtype int8 (`int8`) or float32.
  Error value_of(uint32_t oi, int64_t vi, int rank, bool out, bool int8, const ValueInfo** v) {
    if (vi < 0 || uint64_t(vi) >= prog->values()->size()) return ctx.fail(Error::InvalidProgram, "op %u: value %lld out of range", oi, (long long)vi);
    *v = &values[vi];
    if ((*v)->int8 != int8) {
      return ctx.fail(Error::InvalidProgram, "op %u: value %lld is %s, the op takes %s there", oi, (long long)vi,
                      (*v)->int8 ? "int8" : "float32", int8 ? "int8" : "float32");
    }
    if (rank && (*v)->rank != rank) return ctx.fail(Error::InvalidProgram, "op %u: value %lld must be %d-d", oi, (long long)vi, rank);
    if (out && !(*v)->writable) return ctx.fail(Error::InvalidProgram, "op %u: writes value %lld, which is read-only", oi, (long long)vi);
    return Error::Ok;
  }

  // The same, for a value the op reads at load (weights it packs or sums,
  // quantization parameters): in the payload's weights, so that load checks
  // bytes the file holds instead of planned memory nobody has written, which
  // later writes would change.
  Error constant_of(uint32_t oi, int64_t vi, int rank, bool int8, const char* what, const ValueInfo** v) {
    TERN_CHECK_OK(value_of(oi, vi, rank, false, int8, v));
    if (!(*v)->constant) {
      return ctx.fail(Error::InvalidProgram, "op %u: its %s (value %lld) must be in the payload's weights, not in "
                      "planned memory", oi, what, (long long)vi);
    }
    return Error::Ok;
  }

  // For ops whose kernels assume their output does not overlap an input
  // (__restrict, ukernels/common/f32_pool.h): the two values' bytes apart.
  // The exporter never plans an overlap; a crafted payload can.
  Error disjoint(uint32_t oi, const ValueInfo& x, const ValueInfo& y) {
    const uintptr_t x0 = reinterpret_cast<uintptr_t>(x.data), y0 = reinterpret_cast<uintptr_t>(y.data);
    const uintptr_t xn = uintptr_t(x.numel) * (x.int8 ? 1 : sizeof(float)), yn = uintptr_t(y.numel) * (y.int8 ? 1 : sizeof(float));
    if (xn > 0 && yn > 0 && x0 < y0 + yn && y0 < x0 + xn) {
      return ctx.fail(Error::InvalidProgram, "op %u: its output overlaps its input, which this op does not allow", oi);
    }
    return Error::Ok;
  }

  // Two ints from a [int] field, each in [lo, 1 << 16].
  Error pair(uint32_t oi, const flatbuffers::Vector<int32_t>* v, const char* what, int32_t lo, int32_t* a, int32_t* b) {
    if (v == nullptr || v->size() != 2 || v->Get(0) < lo || v->Get(1) < lo || v->Get(0) > (1 << 16) || v->Get(1) > (1 << 16)) {
      return ctx.fail(Error::InvalidProgram, "op %u: %s must be 2 ints >= %d", oi, what, lo);
    }
    *a = v->Get(0), *b = v->Get(1);
    return Error::Ok;
  }

  Error epilogue(uint32_t oi, fb::Activation a, float lo, float hi, Epilogue* ep) {
    if (int(a) < 0 || a > fb::Activation::Silu || std::isnan(lo) || std::isnan(hi) || lo > hi) {
      return ctx.fail(Error::InvalidProgram, "op %u: bad activation %d [%g, %g]", oi, int(a), lo, hi);
    }
    ep->activation = static_cast<Activation>(a);
    ep->clamp = {lo, hi};
    ep->vact = isa.vact;
    return Error::Ok;
  }

  static int64_t window_out(int64_t in, int32_t k, int32_t s, int32_t p, int32_t d) {
    const int64_t span = in + 2 * int64_t(p) - int64_t(d) * (k - 1) - 1;
    return span < 0 ? -1 : span / s + 1;
  }

  Error prepare_conv(uint32_t oi, const fb::Conv& c, CpuOp* op);
  template <typename Table>
  Error pool_window(uint32_t oi, const Table& p, const ValueInfo& x, const ValueInfo& y, CpuOp* op);
  Error prepare_pool(uint32_t oi, const fb::Pool& p, CpuOp* op);
  Error prepare_transpose(uint32_t oi, const fb::Transpose& t, CpuOp* op);
  Error prepare_elementwise(uint32_t oi, const fb::Op& o, CpuOp* op);
  Error prepare_rows(uint32_t oi, const fb::Op& o, CpuOp* op);
  Error prepare_matmul(uint32_t oi, const fb::MatMul& mm, CpuOp* op);
  Error prepare_attention(uint32_t oi, const fb::Attention& at, CpuOp* op);
  Error prepare_concat(uint32_t oi, const fb::Concat& cc, CpuOp* op);
  Error prepare_interleave(uint32_t oi, const fb::Interleave& il, CpuOp* op);
  Error prepare_slice(uint32_t oi, const fb::Slice& sl, CpuOp* op);
  Error prepare_winograd_input(uint32_t oi, const fb::WinogradInput& wi, CpuOp* op);
  Error prepare_winograd_output(uint32_t oi, const fb::WinogradOutput& wo, CpuOp* op);
  Error prepare_qconv(uint32_t oi, const fb::QConv& c, CpuOp* op);
  Error prepare_quantize(uint32_t oi, const fb::Op& o, CpuOp* op);
  Error prepare_qbinary(uint32_t oi, const fb::QBinary& q, CpuOp* op);
  Error prepare_dynamic_quantize(uint32_t oi, const fb::DynamicQuantize& d, CpuOp* op);
  Error prepare_qlinear(uint32_t oi, const fb::QLinear& l, CpuOp* op);
  Error prepare_wlinear(uint32_t oi, const fb::WLinear& l, CpuOp* op);
  Error prepare_qpool(uint32_t oi, const fb::QPool& q, CpuOp* op);
  Error prepare_op(uint32_t oi, CpuOp* op);
  Error link_chain(uint32_t oi, CpuOp* ops, uint32_t n);
  Error make_label(const fb::Op& o, CpuOp* op);
  Error check_broadcast(uint32_t oi, const ValueInfo& b, const ValueInfo& y, int64_t inner, int64_t block);
};

// "Conv: convolution_3+relu_2" (kind, then the nodes it covers), kept for the
// method's life: what profiles and traces show.
Error Loader::make_label(const fb::Op& o, CpuOp* op) {
  static const char* const kKinds[] = {"op", "Conv", "Transpose", "Pool", "Binary", "Unary", "Copy", "LayerNorm",
                                       "Softmax", "MatMul", "Attention", "Concat", "Interleave", "Slice",
                                       "WinogradInput", "WinogradOutput", "QConv", "Quantize", "Dequantize", "QBinary",
                                       "DynamicQuantize", "QLinear", "WLinear", "QPool"};
  const int k = static_cast<int>(o.kind_type());
  const char* kind = k > 0 && k < int(sizeof(kKinds) / sizeof(kKinds[0])) ? kKinds[k] : kKinds[0];
  const size_t n = strlen(kind) + 2 + strlen(op->nodes) + 1;
  char* label = static_cast<char*>(ctx.allocate(n));
  if (label == nullptr) return Error::OutOfMemory;
  snprintf(label, n, op->nodes[0] ? "%s: %s" : "%s%s", kind, op->nodes);
  op->label = label;
  return Error::Ok;
}

Error Loader::prepare_conv(uint32_t oi, const fb::Conv& c, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *r = nullptr;
  TERN_CHECK_OK(value(oi, c.x(), 4, false, &x));
  TERN_CHECK_OK(value(oi, c.y(), 4, true, &y));
  TERN_CHECK_OK(value(oi, c.weights(), 1, false, &w));
  if (c.residual() >= 0) TERN_CHECK_OK(value(oi, c.residual(), 4, false, &r));
  ConvGeometry& g = op->conv;
  TERN_CHECK_OK(pair(oi, c.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(pair(oi, c.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(pair(oi, c.padding(), "padding", -(1 << 16), &g.ph, &g.pw));
  TERN_CHECK_OK(pair(oi, c.dilation(), "dilation", 1, &g.dh, &g.dw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.x_stride = x->sizes[3];
  g.oh = y->sizes[1], g.ow = y->sizes[2], g.y_stride = y->sizes[3];
  g.c = c.in_channels() ? c.in_channels() : g.x_stride;
  g.oc = c.out_channels() ? c.out_channels() : g.y_stride;
  g.depthwise = c.depthwise();
  const int64_t xo = c.x_offset(), yo = c.y_offset();
  const bool dense = xo == 0 && yo == 0 && g.c == g.x_stride && g.oc == g.y_stride;
  if (xo < 0 || yo < 0 || g.c < 1 || g.oc < 1 || g.c > g.x_stride - xo || g.oc > g.y_stride - yo ||
      (!dense && (g.depthwise || r != nullptr))) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): channel slices [%lld, +%lld) of %lld -> [%lld, +%lld) of %lld "
                    "do not fit (or are not whole for a depthwise convolution or a residual)", oi, op->nodes,
                    (long long)xo, (long long)c.in_channels(), (long long)g.x_stride, (long long)yo,
                    (long long)c.out_channels(), (long long)g.y_stride);
  }
  // every tap is bounds-checked, so any output size is safe; depthwise
  // convolutions (whose row kernel assumes it) have the one their window gives
  const bool window = g.oh == window_out(g.h, g.kh, g.sh, g.ph, g.dh) && g.ow == window_out(g.w, g.kw, g.sw, g.pw, g.dw);
  if (y->sizes[0] != g.n || g.n < 1 || g.h < 1 || g.w < 1 || g.oh < 1 || g.ow < 1 ||
      (g.depthwise && (!window || g.ph < 0 || g.pw < 0)) ||
      (g.depthwise && g.oc != g.c) || g.c < 1 || g.oc < 1 || g.c > (1 << 24) || int64_t(g.kh) * g.kw > 1024) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): conv sizes do not fit x [%lld, %lld, %lld, %lld] -> y", oi,
                    op->nodes, (long long)g.n, (long long)g.h, (long long)g.w, (long long)g.c);
  }
  // The packed floats, overflow-checked: an output channel count near 2^40
  // would wrap conv_packed_floats and let a short weights value pass.
  uint64_t packed = 0;
  const uint64_t panels = (uint64_t(g.depthwise ? g.c : g.oc) + 15) / 16;  // of 16 channels (kPanel)
  if (!checked_mul(panels * 16, 1 + uint64_t(g.kh) * uint64_t(g.kw) * uint64_t(g.depthwise ? 1 : g.c), &packed) ||
      packed > (uint64_t(1) << 40)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): the packed weights of %lld -> %lld channels do not fit 2^40 floats",
                    oi, op->nodes, (long long)g.c, (long long)g.oc);
  }
  if (uint64_t(w->numel) != conv_packed_floats(g)) {
    return ctx.fail(Error::InvalidProgram, "op %u: %lld packed weight floats, the geometry needs %zu", oi,
                    (long long)w->numel, conv_packed_floats(g));
  }
  if (r != nullptr && memcmp(r->sizes, y->sizes, sizeof(int64_t) * 4) != 0) {
    return ctx.fail(Error::InvalidProgram, "op %u: residual sizes differ from the output's", oi);
  }
  TERN_CHECK_OK(epilogue(oi, c.activation(), c.min(), c.max(), &op->ep));
  op->kind = CpuOpKind::Conv;
  op->fuse_next = c.fuse_next();
  op->x = x->data + xo, op->x2 = r ? r->data : nullptr, op->weights = w->data, op->y = y->data + yo;
  op->numel = y->numel;
  const size_t s = conv_scratch_bytes(g, isa);
  if (s > scratch) scratch = s;
  const int64_t zeros = int64_t(conv_zero_floats(g));
  if (zeros > zero_floats) zero_floats = zeros;
  return Error::Ok;
}

// A Pool's or QPool's window over x -> y, checked.
template <typename Table>
Error Loader::pool_window(uint32_t oi, const Table& p, const ValueInfo& x, const ValueInfo& y, CpuOp* op) {
  PoolGeometry& g = op->pool;
  TERN_CHECK_OK(pair(oi, p.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(pair(oi, p.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(pair(oi, p.padding(), "padding", 0, &g.ph, &g.pw));
  g.n = x.sizes[0], g.h = x.sizes[1], g.w = x.sizes[2], g.c = x.sizes[3];
  g.oh = y.sizes[1], g.ow = y.sizes[2];
  g.max = p.kind() == fb::PoolKind::Max;
  g.count_padding = p.count_padding();
  // an input of height or width 0 has windows with no tap inside it (the
  // portable kernels refuse it too)
  if (g.h < 1 || g.w < 1) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): pool over an input of height %lld and width %lld (each must be "
                    "at least 1)", oi, op->nodes, (long long)g.h, (long long)g.w);
  }
  if (int(p.kind()) < 0 || p.kind() > fb::PoolKind::Average || y.sizes[0] != g.n || y.sizes[3] != g.c ||
      g.oh != window_out(g.h, g.kh, g.sh, g.ph, 1) || g.ow != window_out(g.w, g.kw, g.sw, g.pw, 1) ||
      2 * g.ph > g.kh || 2 * g.pw > g.kw) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): pool sizes do not fit", oi, op->nodes);
  }
  return Error::Ok;
}

Error Loader::prepare_pool(uint32_t oi, const fb::Pool& p, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(value(oi, p.x(), 4, false, &x));
  TERN_CHECK_OK(value(oi, p.y(), 4, true, &y));
  TERN_CHECK_OK(pool_window(oi, p, *x, *y, op));
  TERN_CHECK_OK(disjoint(oi, *x, *y));
  const PoolGeometry& g = op->pool;
  op->kind = CpuOpKind::Pool;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  const size_t s = pool_scratch_bytes(g);
  if (s > scratch) scratch = s;
  if (g.c > zero_floats) zero_floats = g.c;
  return Error::Ok;
}

Error Loader::prepare_transpose(uint32_t oi, const fb::Transpose& t, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  const bool int8 = t.x() < prog->values()->size() && values[t.x()].int8;  // x and y of one dtype, either
  TERN_CHECK_OK(value_of(oi, t.x(), 0, false, int8, &x));
  TERN_CHECK_OK(value_of(oi, t.y(), 0, true, int8, &y));
  op->int8 = int8;
  const int r = x->rank;
  const auto* perm = t.perm();
  if (r > 4 || y->rank != r || perm == nullptr || perm->size() != uint32_t(r)) {
    return ctx.fail(Error::InvalidProgram, "op %u: transpose of rank %d (at most 4) needs a perm of that length", oi, r);
  }
  int64_t x_strides[4] = {};
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    x_strides[d] = stride;
    stride *= x->sizes[d];
  }
  bool seen[4] = {};
  Transpose4& tr = op->transpose;
  for (int i = 0; i < 4; ++i) tr.sizes[i] = 1, tr.strides[i] = 0;
  for (int i = 0; i < r; ++i) {
    const int32_t a = perm->Get(i);
    if (a < 0 || a >= r || seen[a] || y->sizes[i] != x->sizes[a]) {
      return ctx.fail(Error::InvalidProgram, "op %u: perm is not a permutation matching the sizes", oi);
    }
    seen[a] = true;
    tr.sizes[4 - r + i] = y->sizes[i];
    tr.strides[4 - r + i] = x_strides[a];
  }
  op->kind = CpuOpKind::Transpose;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

// Binary, Unary, Copy: every value of the same element count (Binary and
// Unary: the same sizes).
Error Loader::prepare_elementwise(uint32_t oi, const fb::Op& o, CpuOp* op) {
  const ValueInfo *x = nullptr, *x2 = nullptr, *y = nullptr;
  if (const fb::Binary* b = o.kind_as_Binary()) {
    TERN_CHECK_OK(value(oi, b->a(), 0, false, &x));
    TERN_CHECK_OK(value(oi, b->b(), 0, false, &x2));
    TERN_CHECK_OK(value(oi, b->y(), 0, true, &y));
    if (int(b->kind()) < 0 || b->kind() > fb::BinaryKind::Mul) return ctx.fail(Error::InvalidProgram, "op %u: bad binary kind", oi);
    TERN_CHECK_OK(epilogue(oi, b->activation(), b->min(), b->max(), &op->ep));
    op->kind = CpuOpKind::Binary;
    op->binary = uint8_t(b->kind());
    op->b_inner = b->b_inner();
    op->b_block = b->b_block();
  } else if (const fb::Unary* u = o.kind_as_Unary()) {
    TERN_CHECK_OK(value(oi, u->x(), 0, false, &x));
    TERN_CHECK_OK(value(oi, u->y(), 0, true, &y));
    TERN_CHECK_OK(epilogue(oi, u->activation(), u->min(), u->max(), &op->ep));
    op->kind = CpuOpKind::Unary;
    op->scale = u->scale();
    op->shift = u->shift();
    if (!std::isfinite(op->scale) || !std::isfinite(op->shift)) return ctx.fail(Error::InvalidProgram, "op %u: bad scale or shift", oi);
  } else {
    const fb::Copy* c = o.kind_as_Copy();
    const bool int8 = c->x() < prog->values()->size() && values[c->x()].int8;  // bytes of either dtype, both the same
    TERN_CHECK_OK(value_of(oi, c->x(), 0, false, int8, &x));
    TERN_CHECK_OK(value_of(oi, c->y(), 0, true, int8, &y));
    op->kind = CpuOpKind::Copy;
    op->int8 = int8;
  }
  const bool copy = op->kind == CpuOpKind::Copy;
  const bool broadcast = op->kind == CpuOpKind::Binary && op->b_inner != 0;
  if (broadcast) TERN_CHECK_OK(check_broadcast(oi, *x2, *y, op->b_inner, op->b_block));
  for (const ValueInfo* v : {x, broadcast ? nullptr : x2}) {
    if (v == nullptr) continue;
    if (v->numel != y->numel || (!copy && (v->rank != y->rank || memcmp(v->sizes, y->sizes, sizeof(int64_t) * y->rank) != 0))) {
      return ctx.fail(Error::InvalidProgram, "op %u (%s): operand sizes differ from the output's", oi, op->nodes);
    }
  }
  op->x = x->data, op->x2 = x2 ? x2->data : nullptr, op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

// LayerNorm and Softmax: x and y of the same sizes, made of rows of `inner`.
Error Loader::prepare_rows(uint32_t oi, const fb::Op& o, CpuOp* op) {
  const fb::LayerNorm* ln = o.kind_as_LayerNorm();
  const fb::Softmax* sm = o.kind_as_Softmax();
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *b = nullptr;
  TERN_CHECK_OK(value(oi, ln ? ln->x() : sm->x(), 0, false, &x));
  TERN_CHECK_OK(value(oi, ln ? ln->y() : sm->y(), 0, true, &y));
  op->inner = ln ? ln->inner() : sm->inner();
  if (x->numel != y->numel || op->inner < 1 || y->numel % op->inner != 0) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): rows of %lld do not fit %lld elements", oi, op->nodes,
                    (long long)op->inner, (long long)y->numel);
  }
  if (ln) {
    if (ln->weight() >= 0) TERN_CHECK_OK(value(oi, ln->weight(), 0, false, &w));
    if (ln->bias() >= 0) TERN_CHECK_OK(value(oi, ln->bias(), 0, false, &b));
    if ((w && w->numel != op->inner) || (b && b->numel != op->inner) || !(ln->eps() >= 0.f) || !std::isfinite(ln->eps())) {
      return ctx.fail(Error::InvalidProgram, "op %u: layer norm weight, bias or eps do not fit", oi);
    }
    op->eps = ln->eps();
  }
  op->kind = ln ? CpuOpKind::LayerNorm : CpuOpKind::Softmax;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  op->weights = w ? w->data : nullptr, op->bias = b ? b->data : nullptr;
  return Error::Ok;
}

Error Loader::prepare_matmul(uint32_t oi, const fb::MatMul& mm, CpuOp* op) {
  const ValueInfo *a = nullptr, *b = nullptr, *y = nullptr, *p = nullptr;
  TERN_CHECK_OK(value(oi, mm.a(), 0, false, &a));
  TERN_CHECK_OK(value(oi, mm.b(), 0, false, &b));
  TERN_CHECK_OK(value(oi, mm.y(), 0, true, &y));
  TERN_CHECK_OK(value(oi, mm.packed(), 0, true, &p));
  const int64_t bt = mm.batch(), m = mm.m(), k = mm.k(), n = mm.n();
  const int64_t limit = int64_t(1) << 24;
  const bool sane = bt >= 1 && m >= 1 && k >= 1 && n >= 1 && bt < limit && m < limit && k < limit && n < limit;
  const int64_t panels = sane ? (n + kPanel - 1) / kPanel : 0;  // n may be anything until sane
  const int64_t need = sane ? elements({bt, panels, kPanel, 1 + k}) : -1;
  if (!sane || a->numel != elements({bt, m, k}) || b->numel != elements({bt, k, n}) ||
      y->numel != elements({bt, m, n}) || need < 0 || p->numel < need) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): matmul sizes do not fit its values", oi, op->nodes);
  }
  op->kind = CpuOpKind::MatMul;
  op->x = a->data, op->x2 = b->data, op->y = y->data, op->packed = p->data, op->numel = y->numel;
  op->batch = bt, op->m = m, op->k = k, op->n = n;
  ConvGeometry g{};
  g.n = m, g.h = g.w = g.oh = g.ow = 1, g.c = k, g.oc = n, g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  const size_t s = conv_scratch_bytes(g, isa);
  if (s > scratch) scratch = s;
  return Error::Ok;
}

Error Loader::prepare_attention(uint32_t oi, const fb::Attention& at, CpuOp* op) {
  const ValueInfo *q = nullptr, *k = nullptr, *v = nullptr, *y = nullptr, *m = nullptr, *p = nullptr;
  TERN_CHECK_OK(value(oi, at.q(), 0, false, &q));
  TERN_CHECK_OK(value(oi, at.k(), 0, false, &k));
  TERN_CHECK_OK(value(oi, at.v(), 0, false, &v));
  TERN_CHECK_OK(value(oi, at.y(), 0, true, &y));
  TERN_CHECK_OK(value(oi, at.packed(), 0, true, &p));
  if (at.mask() >= 0) TERN_CHECK_OK(value(oi, at.mask(), 0, false, &m));
  AttentionGeometry& a = op->attention;
  a.batch = at.batch(), a.heads = at.heads(), a.kv_heads = at.kv_heads();
  a.l = at.l(), a.s = at.s(), a.e = at.e(), a.ev = at.ev();
  const int64_t limit = int64_t(1) << 24;
  bool ok = true;
  for (int64_t d : {a.batch, a.heads, a.kv_heads, a.l, a.s, a.e, a.ev}) ok = ok && d >= 1 && d < limit;
  // with q, k, v and y within 2^40 elements, attention_packed_floats cannot overflow
  ok = ok && a.heads % a.kv_heads == 0 && q->numel == elements({a.batch, a.heads, a.l, a.e}) &&
       k->numel == elements({a.batch, a.kv_heads, a.s, a.e}) && v->numel == elements({a.batch, a.kv_heads, a.s, a.ev}) &&
       y->numel == elements({a.batch, a.heads, a.l, a.ev}) && std::isfinite(at.scale());
  if (!ok) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): attention sizes do not fit q, k, v and y", oi, op->nodes);
  }
  if (p->numel < attention_packed_floats(a)) {
    return ctx.fail(Error::InvalidProgram, "op %u: attention workspace of %lld floats, it needs %lld", oi,
                    (long long)p->numel, (long long)attention_packed_floats(a));
  }
  // the mask broadcasts to [batch, heads, l, s], aligned on the right
  for (int d = 0; d < 4; ++d) a.mask_strides[d] = 0;
  if (m != nullptr) {
    const int64_t full[4] = {a.batch, a.heads, a.l, a.s};
    if (m->rank > 4) return ctx.fail(Error::InvalidProgram, "op %u: attention mask of rank %d (at most 4)", oi, m->rank);
    int64_t stride = 1;
    for (int d = m->rank - 1; d >= 0; --d) {
      const int fd = 4 - m->rank + d;
      if (m->sizes[d] != full[fd] && m->sizes[d] != 1) {
        return ctx.fail(Error::InvalidProgram, "op %u: attention mask dim %d (%lld) does not broadcast to %lld", oi, d,
                        (long long)m->sizes[d], (long long)full[fd]);
      }
      a.mask_strides[fd] = m->sizes[d] == 1 ? 0 : stride;
      stride *= m->sizes[d];
    }
  }
  a.k = k->data, a.v = v->data, a.mask = m ? m->data : nullptr, a.packed = p->data;
  a.scale = at.scale(), a.causal = at.causal();
  op->kind = CpuOpKind::Attention;
  op->x = q->data, op->y = y->data, op->numel = y->numel;
  const size_t s = attention_scratch_bytes(a, isa);
  if (s > scratch) scratch = s;
  return Error::Ok;
}

Error Loader::prepare_concat(uint32_t oi, const fb::Concat& cc, CpuOp* op) {
  const ValueInfo* y = nullptr;
  TERN_CHECK_OK(value(oi, cc.y(), 0, true, &y));
  const auto* xs = cc.xs();
  const auto* offsets = cc.offsets();
  const int64_t outer = cc.outer();
  if (!items_aligned(offsets)) return ctx.fail(Error::InvalidProgram, "op %u (%s): misaligned concat offsets", oi, op->nodes);
  if (xs == nullptr || offsets == nullptr || xs->size() != offsets->size() || outer < 1 || y->numel < outer ||
      y->numel % outer != 0) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): concat needs as many offsets as inputs and outer dividing y", oi,
                    op->nodes);
  }
  ConcatParts& c = op->concat;
  c.count = xs->size(), c.outer = outer, c.row = y->numel / outer;
  const float** ptrs = static_cast<const float**>(ctx.allocate(sizeof(float*) * size_t(c.count ? c.count : 1)));
  int64_t* sizes = static_cast<int64_t*>(ctx.allocate(sizeof(int64_t) * 2 * size_t(c.count ? c.count : 1)));
  if (ptrs == nullptr || sizes == nullptr) return Error::OutOfMemory;
  for (int64_t i = 0; i < c.count; ++i) {
    const ValueInfo* x = nullptr;
    TERN_CHECK_OK(value(oi, xs->Get(uint32_t(i)), 0, false, &x));
    const int64_t inner = x->numel / outer, at = offsets->Get(uint32_t(i));
    if (x->numel % outer != 0 || at < 0 || inner > c.row - at) {
      return ctx.fail(Error::InvalidProgram, "op %u (%s): concat input %lld (%lld elements at column %lld) does not fit "
                      "rows of %lld", oi, op->nodes, (long long)i, (long long)x->numel, (long long)at, (long long)c.row);
    }
    ptrs[i] = x->data, sizes[i] = inner, sizes[c.count + i] = at;
  }
  c.xs = ptrs, c.inners = sizes, c.offsets = sizes + c.count;
  op->kind = CpuOpKind::Concat;
  op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

Error Loader::prepare_interleave(uint32_t oi, const fb::Interleave& il, CpuOp* op) {
  const ValueInfo* y = nullptr;
  TERN_CHECK_OK(value(oi, il.y(), 4, true, &y));
  InterleaveParts& p = op->interleave;
  TERN_CHECK_OK(pair(oi, il.stride(), "stride", 1, &p.sh, &p.sw));
  p.n = y->sizes[0], p.oh = y->sizes[1], p.ow = y->sizes[2], p.c = y->sizes[3];
  const auto* xs = il.xs();
  if (xs == nullptr || uint64_t(xs->size()) != uint64_t(p.sh) * uint64_t(p.sw) || p.oh < p.sh || p.ow < p.sw || p.c < 1) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): interleave needs stride[0] * stride[1] inputs and an output "
                    "at least as large as its stride", oi, op->nodes);
  }
  const float** ptrs = static_cast<const float**>(ctx.allocate(sizeof(float*) * xs->size()));
  if (ptrs == nullptr) return Error::OutOfMemory;
  for (uint32_t i = 0; i < xs->size(); ++i) {
    const ValueInfo* x = nullptr;
    TERN_CHECK_OK(value(oi, xs->Get(i), 4, false, &x));
    const int64_t py = i / p.sw, px = i % p.sw;
    const int64_t want[4] = {p.n, (p.oh - py + p.sh - 1) / p.sh, (p.ow - px + p.sw - 1) / p.sw, p.c};
    if (memcmp(x->sizes, want, sizeof(want)) != 0) {
      return ctx.fail(Error::InvalidProgram, "op %u (%s): interleave input %u is not [%lld, %lld, %lld, %lld]", oi,
                      op->nodes, i, (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
    }
    ptrs[i] = x->data;
  }
  p.xs = ptrs;
  op->kind = CpuOpKind::Interleave;
  op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

Error Loader::prepare_slice(uint32_t oi, const fb::Slice& sl, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(value(oi, sl.x(), 0, false, &x));
  TERN_CHECK_OK(value(oi, sl.y(), 0, true, &y));
  const int64_t outer = sl.outer(), offset = sl.offset();
  if (outer < 1 || x->numel % outer != 0 || y->numel % outer != 0 || offset < 0 ||
      y->numel / outer > x->numel / outer - offset || x->data == y->data) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): slice of %lld rows at %lld does not fit x (%lld elements) and "
                    "y (%lld)", oi, op->nodes, (long long)outer, (long long)offset, (long long)x->numel,
                    (long long)y->numel);
  }
  op->kind = CpuOpKind::Slice;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  op->outer = outer, op->offset = offset, op->row = x->numel / outer;
  return Error::Ok;
}

Error Loader::prepare_winograd_input(uint32_t oi, const fb::WinogradInput& wi, CpuOp* op) {
  const ValueInfo *x = nullptr, *v = nullptr;
  TERN_CHECK_OK(value(oi, wi.x(), 4, false, &x));
  TERN_CHECK_OK(value(oi, wi.v(), 0, true, &v));
  ConvGeometry& g = op->conv;
  TERN_CHECK_OK(pair(oi, wi.padding(), "padding", -(1 << 16), &g.ph, &g.pw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.c = x->sizes[3], g.oh = wi.oh(), g.ow = wi.ow();
  const int64_t limit = int64_t(1) << 24;
  // oh and ow come from the payload: bounded before they are used.
  if (g.c < 1 || g.oh < 1 || g.ow < 1 || g.oh > limit || g.ow > limit) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): winograd input output size %lld x %lld, channels %lld: each "
                    "must be in [1, 2^24]", oi, op->nodes, (long long)g.oh, (long long)g.ow, (long long)g.c);
  }
  const int64_t rows = elements({g.n, (g.oh + 1) / 2, (g.ow + 1) / 2, g.c});  // tiles * c
  if (rows < 0 || v->numel != 16 * winograd_block(rows / g.c, g.c)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): winograd input sizes do not fit x and v", oi, op->nodes);
  }
  op->kind = CpuOpKind::WinogradInput;
  op->x = x->data, op->y = v->data, op->numel = v->numel;
  if (g.c > zero_floats) zero_floats = g.c;
  return Error::Ok;
}

Error Loader::prepare_winograd_output(uint32_t oi, const fb::WinogradOutput& wo, CpuOp* op) {
  const ValueInfo *m = nullptr, *y = nullptr, *b = nullptr, *r = nullptr;
  TERN_CHECK_OK(value(oi, wo.m(), 0, false, &m));
  TERN_CHECK_OK(value(oi, wo.y(), 4, true, &y));
  if (wo.bias() >= 0) TERN_CHECK_OK(value(oi, wo.bias(), 0, false, &b));
  if (wo.residual() >= 0) TERN_CHECK_OK(value(oi, wo.residual(), 4, false, &r));
  ConvGeometry& g = op->conv;
  g.n = y->sizes[0], g.oh = y->sizes[1], g.ow = y->sizes[2], g.oc = y->sizes[3];
  if (g.oc < 1 || g.oh < 1 || g.ow < 1 || g.oh > (1 << 24) || g.ow > (1 << 24) ||
      m->numel != 16 * winograd_block(g.n * ((g.oh + 1) / 2) * ((g.ow + 1) / 2), g.oc) ||
      (b && b->numel != g.oc) || (r && memcmp(r->sizes, y->sizes, sizeof(int64_t) * 4) != 0)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): winograd output sizes do not fit m, y, bias and residual", oi,
                    op->nodes);
  }
  TERN_CHECK_OK(epilogue(oi, wo.activation(), wo.min(), wo.max(), &op->ep));
  op->kind = CpuOpKind::WinogradOutput;
  op->x = m->data, op->y = y->data, op->x2 = r ? r->data : nullptr, op->bias = b ? b->data : nullptr;
  op->numel = y->numel;
  if (g.oc > zero_floats) zero_floats = g.oc;
  const size_t s = winograd_scratch_bytes(g.oc);
  if (s > scratch) scratch = s;
  return Error::Ok;
}

// b has exactly the elements y's broadcast reads: b_inner per block, one
// block per b_block elements of y (or one block when b_block is 0).
Error Loader::check_broadcast(uint32_t oi, const ValueInfo& b, const ValueInfo& y, int64_t inner, int64_t block) {
  const bool ok = inner > 0 && block >= 0 && y.numel % inner == 0 &&
                  (block == 0 ? b.numel == inner : (block % inner == 0 && y.numel % block == 0 && b.numel == inner * (y.numel / block)));
  if (!ok) {
    return ctx.fail(Error::InvalidProgram, "op %u: b (%lld elements) does not broadcast to y (%lld) with inner %lld, block %lld",
                    oi, (long long)b.numel, (long long)y.numel, (long long)inner, (long long)block);
  }
  return Error::Ok;
}

Error Loader::prepare_op(uint32_t oi, CpuOp* op) {
  const fb::Op& o = *prog->ops()->Get(oi);
  *op = CpuOp();
  op->nodes = o.nodes() ? o.nodes()->c_str() : "";
  TERN_CHECK_OK(make_label(o, op));
  if (o.kind() == nullptr) return ctx.fail(Error::InvalidProgram, "op %u: kind %d without a table", oi, int(o.kind_type()));
  switch (o.kind_type()) {
    case fb::OpKind::Conv: return prepare_conv(oi, *o.kind_as_Conv(), op);
    case fb::OpKind::Pool: return prepare_pool(oi, *o.kind_as_Pool(), op);
    case fb::OpKind::Transpose: return prepare_transpose(oi, *o.kind_as_Transpose(), op);
    case fb::OpKind::Binary:
    case fb::OpKind::Unary:
    case fb::OpKind::Copy: return prepare_elementwise(oi, o, op);
    case fb::OpKind::LayerNorm:
    case fb::OpKind::Softmax: return prepare_rows(oi, o, op);
    case fb::OpKind::MatMul: return prepare_matmul(oi, *o.kind_as_MatMul(), op);
    case fb::OpKind::Attention: return prepare_attention(oi, *o.kind_as_Attention(), op);
    case fb::OpKind::Concat: return prepare_concat(oi, *o.kind_as_Concat(), op);
    case fb::OpKind::Interleave: return prepare_interleave(oi, *o.kind_as_Interleave(), op);
    case fb::OpKind::Slice: return prepare_slice(oi, *o.kind_as_Slice(), op);
    case fb::OpKind::WinogradInput: return prepare_winograd_input(oi, *o.kind_as_WinogradInput(), op);
    case fb::OpKind::WinogradOutput: return prepare_winograd_output(oi, *o.kind_as_WinogradOutput(), op);
    case fb::OpKind::QConv: return prepare_qconv(oi, *o.kind_as_QConv(), op);
    case fb::OpKind::Quantize:
    case fb::OpKind::Dequantize: return prepare_quantize(oi, o, op);
    case fb::OpKind::QBinary: return prepare_qbinary(oi, *o.kind_as_QBinary(), op);
    case fb::OpKind::DynamicQuantize: return prepare_dynamic_quantize(oi, *o.kind_as_DynamicQuantize(), op);
    case fb::OpKind::QLinear: return prepare_qlinear(oi, *o.kind_as_QLinear(), op);
    case fb::OpKind::WLinear: return prepare_wlinear(oi, *o.kind_as_WLinear(), op);
    case fb::OpKind::QPool: return prepare_qpool(oi, *o.kind_as_QPool(), op);
    default: return ctx.fail(Error::InvalidProgram, "op %u: unknown kind %d", oi, int(o.kind_type()));
  }
}

// An int8 quantization parameter pair: a positive finite scale and a zero
// point in int8's range.
static bool qparams_ok(float scale, int32_t zero_point) {
  return scale > 0.0f && std::isfinite(scale) && zero_point >= -128 && zero_point <= 127;
}

Error Loader::prepare_qconv(uint32_t oi, const fb::QConv& c, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *ws = nullptr, *b = nullptr;
  TERN_CHECK_OK(value_of(oi, c.x(), 4, false, true, &x));
  TERN_CHECK_OK(value_of(oi, c.y(), 4, true, true, &y));
  TERN_CHECK_OK(constant_of(oi, c.weights(), 1, true, "weights", &w));
  TERN_CHECK_OK(constant_of(oi, c.w_scales(), 1, false, "w_scales", &ws));
  if (c.bias() >= 0) TERN_CHECK_OK(constant_of(oi, c.bias(), 1, false, "bias", &b));
  ConvGeometry& g = op->qconv.g;
  g = ConvGeometry{};
  TERN_CHECK_OK(pair(oi, c.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(pair(oi, c.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(pair(oi, c.padding(), "padding", 0, &g.ph, &g.pw));
  TERN_CHECK_OK(pair(oi, c.dilation(), "dilation", 1, &g.dh, &g.dw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.c = x->sizes[3];
  g.oh = y->sizes[1], g.ow = y->sizes[2], g.oc = y->sizes[3];
  g.depthwise = c.depthwise();
  const bool window = g.oh == window_out(g.h, g.kh, g.sh, g.ph, g.dh) && g.ow == window_out(g.w, g.kw, g.sw, g.pw, g.dw);
  // The int32 accumulators hold any sum of ks * kc4 <= 2^15 products of
  // int8 values, with its zero-point corrections (qs8.h).
  const int64_t ks = int64_t(g.kh) * g.kw, kc4 = g.depthwise ? 1 : (g.c + 3) / 4 * 4;
  if (y->sizes[0] != g.n || g.n < 1 || g.h < 1 || g.w < 1 || g.oh < 1 || g.ow < 1 || !window || g.c < 1 || g.oc < 1 ||
      g.c > (1 << 24) || g.oc > (1 << 24) || ks > 1024 || ks * kc4 > (1 << 15) || (g.depthwise && g.oc != g.c)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): int8 conv sizes do not fit x [%lld, %lld, %lld, %lld] -> y "
                    "(at most 2^15 products per output)", oi, op->nodes, (long long)g.n, (long long)g.h,
                    (long long)g.w, (long long)g.c);
  }
  if (uint64_t(w->numel) != qs8_packed_bytes(g)) {  // c, oc < 2^24, ks * kc4 <= 2^15: no overflow
    return ctx.fail(Error::InvalidProgram, "op %u: %lld packed int8 weights, the geometry needs %zu", oi,
                    (long long)w->numel, qs8_packed_bytes(g));
  }
  if (ws->numel != g.oc || (b != nullptr && b->numel != g.oc)) {
    return ctx.fail(Error::InvalidProgram, "op %u: w_scales and bias need %lld floats each", oi, (long long)g.oc);
  }
  if (!qparams_ok(c.x_scale(), c.x_zero_point()) || !qparams_ok(c.y_scale(), c.y_zero_point()) ||
      c.qmin() < -128 || c.qmax() > 127 || c.qmin() > c.qmax()) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): bad quantization (scales %g, %g; zero points %d, %d; "
                    "range [%d, %d])", oi, op->nodes, double(c.x_scale()), double(c.y_scale()), c.x_zero_point(),
                    c.y_zero_point(), c.qmin(), c.qmax());
  }
  for (int64_t j = 0; j < g.oc; ++j) {
    if (!std::isfinite(ws->data[j]) || (b != nullptr && !std::isfinite(b->data[j]))) {
      return ctx.fail(Error::InvalidProgram, "op %u: w_scales or bias %lld is not finite", oi, (long long)j);
    }
  }
  // requantization, computed once, here (qconv.h)
  const size_t nch = size_t(qs8_channels(g));
  int32_t* init = static_cast<int32_t*>(ctx.allocate(sizeof(int32_t) * nch));
  float* scale = static_cast<float*>(ctx.allocate(sizeof(float) * nch));
  float* offset = static_cast<float*>(ctx.allocate(sizeof(float) * nch));
  const size_t zero_bytes = size_t(g.c + 3) / 4 * 4;  // what run_qs8_conv's padding taps read
  int8_t* zeros = static_cast<int8_t*>(ctx.allocate(zero_bytes));
  if (init == nullptr || scale == nullptr || offset == nullptr || zeros == nullptr) return Error::OutOfMemory;
  const int8_t* packed = reinterpret_cast<const int8_t*>(w->data);
  const int64_t bad = qs8_requant(g, packed, c.x_scale(), c.x_zero_point(), ws->data, b ? b->data : nullptr,
                                  c.y_scale(), c.y_zero_point(), qs8, init, scale, offset);
  if (bad >= 0) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): output channel %lld's requantization (x_scale %g * w_scale %g "
                    "/ y_scale %g, bias %g / y_scale) is not finite or passes 2^64", oi, op->nodes, (long long)bad,
                    double(c.x_scale()), double(ws->data[bad]), double(c.y_scale()), b ? double(b->data[bad]) : 0.0);
  }
  memset(zeros, c.x_zero_point(), zero_bytes);
  op->qconv.packed = packed, op->qconv.init = init, op->qconv.scale = scale, op->qconv.offset = offset;
  op->qconv.qmin = float(c.qmin()), op->qconv.qmax = float(c.qmax());
  op->qzeros = zeros;
  op->kind = CpuOpKind::QConv;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  const size_t s = qs8_conv_scratch_bytes(g, qs8);
  if (s > scratch) scratch = s;
  return Error::Ok;
}

// Quantize (float32 x -> int8 y) and Dequantize (int8 x -> float32 y).
Error Loader::prepare_quantize(uint32_t oi, const fb::Op& o, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  const bool quantize = o.kind_type() == fb::OpKind::Quantize;
  float scale;
  int32_t zero_point;
  if (quantize) {
    const fb::Quantize& q = *o.kind_as_Quantize();
    TERN_CHECK_OK(value_of(oi, q.x(), 0, false, false, &x));
    TERN_CHECK_OK(value_of(oi, q.y(), 0, true, true, &y));
    scale = q.inv_scale(), zero_point = q.zero_point();
    if (q.qmin() < -128 || q.qmax() > 127 || q.qmin() > q.qmax()) {
      return ctx.fail(Error::InvalidProgram, "op %u: quant range [%d, %d] is not within int8's", oi, q.qmin(), q.qmax());
    }
    op->qmin = float(q.qmin()), op->qmax = float(q.qmax());
  } else {
    const fb::Dequantize& d = *o.kind_as_Dequantize();
    TERN_CHECK_OK(value_of(oi, d.x(), 0, false, true, &x));
    TERN_CHECK_OK(value_of(oi, d.y(), 0, true, false, &y));
    scale = d.scale(), zero_point = d.zero_point();
  }
  if (!qparams_ok(scale, zero_point) || x->numel != y->numel) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): scale %g, zero point %d, %lld -> %lld elements", oi, op->nodes,
                    double(scale), zero_point, (long long)x->numel, (long long)y->numel);
  }
  op->kind = quantize ? CpuOpKind::Quantize : CpuOpKind::Dequantize;
  op->qscale = scale;  // Quantize: the inverse already
  op->qzero = float(zero_point);
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

Error Loader::prepare_qbinary(uint32_t oi, const fb::QBinary& q, CpuOp* op) {
  const ValueInfo *a = nullptr, *b = nullptr, *y = nullptr;
  TERN_CHECK_OK(value_of(oi, q.a(), 0, false, true, &a));
  TERN_CHECK_OK(value_of(oi, q.b(), 0, false, true, &b));
  TERN_CHECK_OK(value_of(oi, q.y(), 0, true, true, &y));
  for (const ValueInfo* v : {a, b}) {
    if (v->rank != y->rank || memcmp(v->sizes, y->sizes, sizeof(int64_t) * size_t(y->rank)) != 0) {
      return ctx.fail(Error::InvalidProgram, "op %u (%s): operand sizes differ from the output's", oi, op->nodes);
    }
  }
  const float y_scale = q.y_inv_scale();  // positive and finite like a scale
  if ((q.kind() != fb::BinaryKind::Add && q.kind() != fb::BinaryKind::Mul) ||
      !qparams_ok(q.a_scale(), q.a_zero_point()) || !qparams_ok(q.b_scale(), q.b_zero_point()) ||
      !qparams_ok(y_scale, q.y_zero_point()) || q.qmin() < -128 || q.qmax() > 127 || q.qmin() > q.qmax()) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): bad kind or quantization (scales %g, %g, 1/%g; zero "
                    "points %d, %d, %d; range [%d, %d])", oi, op->nodes, double(q.a_scale()), double(q.b_scale()),
                    double(y_scale), q.a_zero_point(), q.b_zero_point(), q.y_zero_point(), q.qmin(), q.qmax());
  }
  // The largest floats the kernel computes (each operand dequantized, their
  // sum or product, that requantized), in double: each within 2^64, so that
  // none overflows to inf (and inf - inf to NaN) on one ISA and not another.
  const double ra = 255.0 * double(q.a_scale()), rb = 255.0 * double(q.b_scale());
  const double r = q.kind() == fb::BinaryKind::Mul ? ra * rb : ra + rb;
  if (!(ra <= kQs8MaxRequant && rb <= kQs8MaxRequant && r <= kQs8MaxRequant && r * double(y_scale) <= kQs8MaxRequant)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): the scales (%g, %g, 1/%g) can make its results pass 2^64",
                    oi, op->nodes, double(q.a_scale()), double(q.b_scale()), double(y_scale));
  }
  op->kind = CpuOpKind::QBinary;
  op->binary = uint8_t(q.kind());
  op->qa_scale = q.a_scale(), op->qa_zero = float(q.a_zero_point());
  op->qb_scale = q.b_scale(), op->qb_zero = float(q.b_zero_point());
  op->qscale = y_scale, op->qzero = float(q.y_zero_point());
  op->qmin = float(q.qmin()), op->qmax = float(q.qmax());
  op->x = a->data, op->x2 = b->data, op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

Error Loader::prepare_qpool(uint32_t oi, const fb::QPool& q, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(value_of(oi, q.x(), 4, false, true, &x));
  TERN_CHECK_OK(value_of(oi, q.y(), 4, true, true, &y));
  TERN_CHECK_OK(pool_window(oi, q, *x, *y, op));
  TERN_CHECK_OK(disjoint(oi, *x, *y));
  PoolGeometry& g = op->pool;
  // int32 sums of 65536 bytes cannot overflow, and are exact in float32
  if (int64_t(g.kh) * g.kw > 65536 || g.c < 1) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): int8 pool of %d x %d taps over %lld channels (at most 65536 "
                    "taps, at least 1 channel)", oi, op->nodes, g.kh, g.kw, (long long)g.c);
  }
  if (!qparams_ok(q.x_scale(), q.x_zero_point()) || !qparams_ok(q.y_inv_scale(), q.y_zero_point()) ||
      q.qmin() < -128 || q.qmax() > 127 || q.qmin() > q.qmax()) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): bad quantization (scales %g, 1/%g; zero points %d, %d; "
                    "range [%d, %d])", oi, op->nodes, double(q.x_scale()), double(q.y_inv_scale()), q.x_zero_point(),
                    q.y_zero_point(), q.qmin(), q.qmax());
  }
  // The largest floats the kernel computes (a sum of up to 65536 dequantized
  // taps, that requantized), bounded as QBinary's.
  const double sum = 65536.0 * 255.0 * double(q.x_scale());
  if (!(sum <= kQs8MaxRequant && sum * double(q.y_inv_scale()) <= kQs8MaxRequant)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): the scales (%g, 1/%g) can make its results pass 2^64", oi,
                    op->nodes, double(q.x_scale()), double(q.y_inv_scale()));
  }
  int8_t* zeros = static_cast<int8_t*>(ctx.allocate(size_t(g.c)));
  if (zeros == nullptr) return Error::OutOfMemory;
  memset(zeros, q.x_zero_point(), size_t(g.c));
  op->kind = CpuOpKind::QPool;
  op->int8 = true;
  op->qzeros = zeros;
  op->qa_scale = q.x_scale(), op->qa_zero = float(q.x_zero_point());
  op->qscale = q.y_inv_scale(), op->qzero = float(q.y_zero_point());
  op->qmin = float(q.qmin()), op->qmax = float(q.qmax());
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  const size_t s = qpool_scratch_bytes(g);
  if (s > scratch) scratch = s;
  return Error::Ok;
}

Error Loader::prepare_dynamic_quantize(uint32_t oi, const fb::DynamicQuantize& d, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr, *qp = nullptr;
  TERN_CHECK_OK(value_of(oi, d.x(), 0, false, false, &x));
  TERN_CHECK_OK(value_of(oi, d.y(), 0, true, true, &y));
  TERN_CHECK_OK(value_of(oi, d.qparams(), 1, true, false, &qp));
  if (x->numel != y->numel || x->numel < 1 || qp->numel != 2 || d.qmin() < -128 || d.qmax() > 127 ||
      d.qmin() > d.qmax() || !(d.eps() > 0.0f) || !std::isfinite(d.eps())) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): x and y of %lld and %lld elements (at least 1), qparams of "
                    "2, range [%d, %d] within int8, eps %g > 0 do not hold", oi, op->nodes, (long long)x->numel,
                    (long long)y->numel, d.qmin(), d.qmax(), double(d.eps()));
  }
  op->kind = CpuOpKind::DynamicQuantize;
  op->qmin = float(d.qmin()), op->qmax = float(d.qmax()), op->qeps = d.eps();
  op->qparams = qp->data;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

Error Loader::prepare_qlinear(uint32_t oi, const fb::QLinear& l, CpuOp* op) {
  const ValueInfo *x = nullptr, *qp = nullptr, *w = nullptr, *ws = nullptr, *b = nullptr, *y = nullptr, *pr = nullptr;
  TERN_CHECK_OK(value_of(oi, l.x(), 2, false, true, &x));
  TERN_CHECK_OK(value(oi, l.x_qparams(), 1, false, &qp));
  TERN_CHECK_OK(constant_of(oi, l.weights(), 1, true, "weights", &w));
  TERN_CHECK_OK(constant_of(oi, l.w_scales(), 1, false, "w_scales", &ws));
  if (l.bias() >= 0) TERN_CHECK_OK(constant_of(oi, l.bias(), 1, false, "bias", &b));
  TERN_CHECK_OK(value(oi, l.y(), 2, true, &y));
  TERN_CHECK_OK(value(oi, l.params(), 1, true, &pr));
  ConvGeometry& g = op->qconv.g;
  g = ConvGeometry{};
  g.n = x->sizes[0], g.c = x->sizes[1], g.oc = y->sizes[1];
  g.h = g.w = g.oh = g.ow = 1, g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  // (qparams: written by a DynamicQuantize before this op runs; any values are
  // safe: the scale only scales, the zero point is clamped to int8's range
  // (run_qlinear) and multiplies weight sums of at most 2^15 * 127)
  if (qp->numel != 2 || y->sizes[0] != g.n || g.n < 1 || g.c < 1 || g.oc < 1 || g.c > (1 << 24) ||
      g.oc > (1 << 24) || (g.c + 3) / 4 * 4 > (1 << 15) || uint64_t(w->numel) != qs8_packed_bytes(g) ||
      ws->numel != g.oc || (b != nullptr && b->numel != g.oc) || pr->numel != 2 * qs8_channels(g)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): int8 linear [%lld, %lld] -> %lld: its weights (%lld "
                    "packed bytes), scales, bias, qparams or params do not fit", oi, op->nodes, (long long)g.n,
                    (long long)g.c, (long long)g.oc, (long long)w->numel);
  }
  const size_t nch = size_t(qs8_channels(g));
  int32_t* sums = static_cast<int32_t*>(ctx.allocate(sizeof(int32_t) * nch));
  float* scales = static_cast<float*>(ctx.allocate(sizeof(float) * nch));
  float* offset = static_cast<float*>(ctx.allocate(sizeof(float) * nch));
  if (sums == nullptr || scales == nullptr || offset == nullptr) return Error::OutOfMemory;
  const int8_t* packed = reinterpret_cast<const int8_t*>(w->data);
  qs8_weight_sums(g, packed, sums);
  for (size_t j = 0; j < nch; ++j) {
    const bool real = int64_t(j) < g.oc;
    scales[j] = real ? ws->data[j] : 0.0f;
    offset[j] = real && b != nullptr ? b->data[j] : 0.0f;
    if (!std::isfinite(scales[j]) || !std::isfinite(offset[j])) {
      return ctx.fail(Error::InvalidProgram, "op %u: w_scales or bias %zu is not finite", oi, j);
    }
  }
  op->kind = CpuOpKind::QLinear;
  op->qconv.packed = packed, op->qconv.offset = offset;
  op->wsums = sums, op->w_scales = scales;
  op->qparams = qp->data, op->params = pr->data;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  const size_t s = qs8_conv_scratch_bytes(g, qs8);  // the row pointers of a tile
  if (s > scratch) scratch = s;
  return Error::Ok;
}

Error Loader::prepare_wlinear(uint32_t oi, const fb::WLinear& l, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *sc = nullptr, *zp = nullptr, *b = nullptr;
  const bool int4 = l.bits() == 4;
  TERN_CHECK_OK(value(oi, l.x(), 2, false, &x));
  TERN_CHECK_OK(value(oi, l.y(), 2, true, &y));
  // int4: uint8 bytes, read as int8 values' bytes
  TERN_CHECK_OK(constant_of(oi, l.weights(), 2, true, "weights", &w));
  TERN_CHECK_OK(constant_of(oi, l.scales(), 0, false, "scales", &sc));
  if (l.zero_points() >= 0) TERN_CHECK_OK(constant_of(oi, l.zero_points(), 0, false, "zero points", &zp));
  if (l.bias() >= 0) TERN_CHECK_OK(constant_of(oi, l.bias(), 1, false, "bias", &b));
  const int64_t m = x->sizes[0], k = x->sizes[1], n = y->sizes[1];
  const int64_t group = int4 ? l.group() : k;
  const int64_t groups = group > 0 && k % group == 0 ? k / group : -1;
  if ((l.bits() != 4 && l.bits() != 8) || m < 1 || k < 1 || n < 1 || k > (1 << 24) || n > (1 << 24) ||
      y->sizes[0] != m || w->sizes[0] != n || w->sizes[1] != (int4 ? k / 2 : k) || (int4 && k % 2 != 0) ||
      groups < 1 || sc->numel != n * groups || (zp != nullptr && zp->numel != n * groups) ||
      (b != nullptr && b->numel != n) || l.qmin() < (int4 ? -8 : -128) || l.qmin() > (int4 ? 15 : 127)) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): weight-only linear [%lld, %lld] -> %lld (%d bits, group "
                    "%lld): its weights, scales, zero points or bias do not fit", oi, op->nodes, (long long)m,
                    (long long)k, (long long)n, l.bits(), (long long)l.group());
  }
  ConvGeometry& g = op->conv;
  g = ConvGeometry{};
  g.n = m, g.h = g.w = g.oh = g.ow = 1, g.c = k, g.oc = n;
  g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  // dequantized straight into the packed float panels (pack_conv_weights' layout)
  float* packed = static_cast<float*>(ctx.allocate(conv_packed_floats(g) * sizeof(float)));
  if (packed == nullptr) return Error::OutOfMemory;
  memset(packed, 0, conv_packed_floats(g) * sizeof(float));
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(w->data);
  const bool is_signed = l.qmin() < 0;
  const size_t panel_floats = size_t(kPanel) * (1 + size_t(k));
  for (int64_t o = 0; o < n; ++o) {
    float* panel = packed + (o / kPanel) * panel_floats;
    const int64_t lane = o % kPanel;
    panel[lane] = b ? b->data[o] : 0.f;
    for (int64_t c = 0; c < k; ++c) {
      float q;
      if (int4) {
        const uint8_t byte = bytes[o * (k / 2) + c / 2];
        const int nib = (c & 1) ? (byte >> 4) : (byte & 0xF);
        q = float(is_signed && nib >= 8 ? nib - 16 : nib);
      } else {
        q = float(int8_t(bytes[o * k + c]));
      }
      const int64_t p = o * groups + c / group;
      panel[kPanel * (1 + c) + lane] = (q - (zp ? zp->data[p] : 0.f)) * sc->data[p];
    }
  }
  op->kind = CpuOpKind::Conv;
  op->x = x->data, op->x2 = nullptr, op->weights = packed, op->y = y->data, op->numel = y->numel;
  op->ep = Epilogue{};
  const size_t s = conv_scratch_bytes(g, isa);
  if (s > scratch) scratch = s;
  const int64_t zeros = int64_t(conv_zero_floats(g));
  if (zeros > zero_floats) zero_floats = zeros;
  return Error::Ok;
}

// A pointwise convolution a chain may run: 1x1, stride 1, no padding,
// whole dense x and y.
bool chain_pointwise(const ConvGeometry& g) {
  return !g.depthwise && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.dh == 1 &&
         g.dw == 1 && g.oh == g.h && g.ow == g.w && g.x_stride == g.c && g.y_stride == g.oc;
}

// Whether Conv b reads exactly Conv a's output.
bool reads_output(const CpuOp& a, const CpuOp& b) {
  return b.x == a.y && b.conv.n == a.conv.n && b.conv.h == a.conv.oh && b.conv.w == a.conv.ow && b.conv.c == a.conv.oc;
}

// ops[oi] has fuse_next: makes it a ConvChain over the Convs after it
// (cpu.fbs Conv.fuse_next), or fails naming what does not fit.
Error Loader::link_chain(uint32_t oi, CpuOp* ops, uint32_t n) {
  CpuOp& a = ops[oi];
  if (!chain_pointwise(a.conv) || a.x2 != nullptr || oi + 1 >= n || ops[oi + 1].kind != CpuOpKind::Conv ||
      !ops[oi + 1].conv.depthwise || !reads_output(a, ops[oi + 1])) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): fuse_next needs a pointwise Conv without a residual followed "
                    "by a depthwise Conv of its output", oi, a.nodes);
  }
  CpuOp& d = ops[oi + 1];
  int count = 2;
  if (d.fuse_next) {
    if (oi + 2 >= n || ops[oi + 2].kind != CpuOpKind::Conv || !chain_pointwise(ops[oi + 2].conv) ||
        !reads_output(d, ops[oi + 2])) {
      return ctx.fail(Error::InvalidProgram, "op %u (%s): fuse_next needs a pointwise Conv of its output next", oi + 1,
                      d.nodes);
    }
    count = 3;
  }
  ConvStage* stages = static_cast<ConvStage*>(ctx.allocate(sizeof(ConvStage) * size_t(count)));
  if (stages == nullptr) return Error::OutOfMemory;
  for (int i = 0; i < count; ++i) stages[i] = {ops[oi + i].conv, ops[oi + i].weights, ops[oi + i].x2, ops[oi + i].ep};
  const size_t s = conv_chain_scratch_bytes(stages, count, isa);
  if (s > scratch) scratch = s;
  // what profiles call it: the stages' labels joined
  size_t len = 1;
  for (int i = 0; i < count; ++i) len += strlen(ops[oi + i].label) + 3;
  char* label = static_cast<char*>(ctx.allocate(len));
  if (label == nullptr) return Error::OutOfMemory;
  label[0] = 0;
  for (int i = 0; i < count; ++i) {
    if (i > 0) strcat(label, " > ");
    strcat(label, ops[oi + i].label);
  }
  a.kind = CpuOpKind::ConvChain, a.chain = count, a.stages = stages, a.label = label, a.y = ops[oi + count - 1].y;
  for (int i = 1; i < count; ++i) ops[oi + i].kind = CpuOpKind::Chained;
  return Error::Ok;
}

}  // namespace

Result<CpuProgram*> load_cpu_program(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                                     Span<EValue* const> outputs, const Isa& isa, const Qs8Kernels& qs8) {
  Loader ld{ctx, inputs, outputs, isa, qs8};
  TERN_CHECK_OK(ld.parse(payload));
  TERN_CHECK_OK(ld.check_args());
  TERN_CHECK_OK(ld.resolve_values());
  CpuProgram* p = static_cast<CpuProgram*>(ctx.allocate(sizeof(CpuProgram)));
  const uint32_t n = ld.prog->ops()->size();
  CpuOp* ops = static_cast<CpuOp*>(ctx.allocate(sizeof(CpuOp) * (n ? n : 1)));
  if (p == nullptr || ops == nullptr) return Error::OutOfMemory;
  for (uint32_t i = 0; i < n; ++i) TERN_CHECK_OK(ld.prepare_op(i, &ops[i]));
  for (uint32_t i = 0; i < n; ++i) {
    if (ops[i].kind == CpuOpKind::Conv && ops[i].fuse_next) TERN_CHECK_OK(ld.link_chain(i, ops, n));
  }
  float* zeros = static_cast<float*>(ctx.allocate(sizeof(float) * size_t(ld.zero_floats)));
  if (zeros == nullptr) return Error::OutOfMemory;
  memset(zeros, 0, sizeof(float) * size_t(ld.zero_floats));
  ctx.request_scratch(ld.scratch);
  *p = CpuProgram{&isa, &qs8, ops, n, zeros, {}};  // kernels: the backend names them
  return p;
}

void run_cpu_program(const CpuProgram& p, RunContext& ctx) {
  for (size_t i = 0; i < p.num_ops; ++i) {
    const CpuOp& op = p.ops[i];
    if (op.kind == CpuOpKind::Chained) continue;  // ran in its ConvChain
    ctx.begin_step(op.label);
    switch (op.kind) {
      case CpuOpKind::Conv: run_conv(op.conv, *p.isa, op.x, op.weights, p.zeros, op.x2, op.y, op.ep, ctx); break;
      case CpuOpKind::Transpose:
        if (op.int8) {
          run_transpose_int8(op.transpose, reinterpret_cast<const int8_t*>(op.x), reinterpret_cast<int8_t*>(op.y), ctx);
        } else {
          run_transpose(op.transpose, op.x, op.y, ctx);
        }
        break;
      case CpuOpKind::Pool: run_pool(op.pool, *p.isa, p.zeros, op.x, op.y, ctx); break;
      case CpuOpKind::Binary: run_binary(op, ctx); break;
      case CpuOpKind::Unary: run_unary(op, ctx); break;
      case CpuOpKind::Copy:
        // empty values may have no storage (data null), which memmove must not get even for 0 bytes
        if (op.x != op.y && op.numel > 0) memmove(op.y, op.x, size_t(op.numel) * (op.int8 ? 1 : sizeof(float)));
        break;
      case CpuOpKind::LayerNorm: run_layer_norm(op, ctx); break;
      case CpuOpKind::Softmax: run_softmax(op, *p.isa, ctx); break;
      case CpuOpKind::MatMul: run_matmul(op, *p.isa, ctx); break;
      case CpuOpKind::Attention: run_attention(op, *p.isa, ctx); break;
      case CpuOpKind::Concat: run_concat(op, ctx); break;
      case CpuOpKind::Interleave: run_interleave(op, ctx); break;
      case CpuOpKind::Slice: run_slice(op, ctx); break;
      case CpuOpKind::WinogradInput: run_winograd_input(op, *p.isa, p.zeros, ctx); break;
      case CpuOpKind::WinogradOutput: run_winograd_output(op, *p.isa, p.zeros, ctx); break;
      case CpuOpKind::ConvChain: run_conv_chain(op.stages, op.chain, *p.isa, op.x, p.zeros, op.y, ctx); break;
      case CpuOpKind::Chained: break;
      case CpuOpKind::QConv:
        run_qs8_conv(op.qconv, *p.qs8, reinterpret_cast<const int8_t*>(op.x), op.qzeros, reinterpret_cast<int8_t*>(op.y),
                     ctx);
        break;
      case CpuOpKind::Quantize: run_quantize(op, *p.qs8, ctx); break;
      case CpuOpKind::Dequantize: run_dequantize(op, ctx); break;
      case CpuOpKind::QBinary: run_qbinary(op, *p.qs8, ctx); break;
      case CpuOpKind::DynamicQuantize: run_dynamic_quantize(op, *p.qs8, ctx); break;
      case CpuOpKind::QLinear: run_qlinear(op, *p.qs8, ctx); break;
      case CpuOpKind::QPool: run_qpool(op, *p.qs8, ctx); break;
    }
    ctx.end_step(op.label);
  }
}

}  // namespace cpu
}  // namespace tern
