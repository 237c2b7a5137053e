#include "backends/cpu/program.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "backends/cpu/schema/cpu_generated.h"
#include "runtime/core/overflow.h"

namespace tern {
namespace cpu {
namespace {

namespace fb = ::tern::backends::cpu::fb;

constexpr size_t kHeaderBytes = 16;  // "TCPU", u32 version, u64 flatbuffer size
constexpr uint32_t kVersion = 1;
constexpr int kMaxRank = 8;

struct ValueInfo {
  float* data;
  int rank;
  int64_t sizes[kMaxRank];
  int64_t numel;
  bool writable;
};

// Everything load_cpu_program builds, while it builds it.
struct Loader {
  PrepareContext& ctx;
  Span<EValue* const> args;
  const Isa& isa;
  const fb::Program* prog = nullptr;
  const uint8_t* blob = nullptr;
  uint64_t blob_bytes = 0;
  ValueInfo* values = nullptr;
  size_t scratch = 0;
  int64_t max_channels = 1;

  Error parse(Span<const uint8_t> p) {
    uint32_t version;
    uint64_t fb_size;
    if (p.size() < kHeaderBytes || memcmp(p.data(), "TCPU", 4) != 0) {
      return ctx.fail(Error::InvalidProgram, "the payload (%zu bytes) is not a cpu backend payload", p.size());
    }
    memcpy(&version, p.data() + 4, 4);
    memcpy(&fb_size, p.data() + 8, 8);
    if (version != kVersion) {
      return ctx.fail(Error::NotSupported, "payload version %u, this runtime reads version %u", version, kVersion);
    }
    uint64_t blob_start;
    if (fb_size > p.size() - kHeaderBytes || !checked_add(kHeaderBytes + fb_size, 63, &blob_start)) {
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

  Error check_args() {
    const uint64_t want = uint64_t(prog->num_inputs()) + prog->num_outputs() + 1;
    if (args.size() != want) {
      return ctx.fail(Error::InvalidProgram, "%zu delegate arguments, the payload wants %u inputs, %u outputs "
                      "and the workspace", args.size(), prog->num_inputs(), prog->num_outputs());
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const bool workspace = i + 1 == args.size();
      if (args[i]->tag != Tag::Tensor || (!workspace && args[i]->tensor.dtype != ScalarType::Float32)) {
        return ctx.fail(Error::InvalidProgram, "delegate argument %zu must be a %s tensor", i,
                        workspace ? "workspace" : "float32");
      }
    }
    if (args[args.size() - 1]->tensor.nbytes() < prog->workspace_bytes()) {
      return ctx.fail(Error::InvalidProgram, "the workspace has %zu bytes, the payload needs %llu",
                      args[args.size() - 1]->tensor.nbytes(), (unsigned long long)prog->workspace_bytes());
    }
    return Error::Ok;
  }

  // Sizes, element count and byte count of value vi (rank <= kMaxRank).
  Error read_shape(uint32_t vi, const fb::Value& v, ValueInfo* out, uint64_t* nbytes) {
    const auto* sizes = v.sizes();
    out->rank = sizes ? int(sizes->size()) : 0;
    if (out->rank > kMaxRank) return ctx.fail(Error::InvalidProgram, "value %u: rank %d over %d", vi, out->rank, kMaxRank);
    uint64_t numel = 1;
    for (int d = 0; d < out->rank; ++d) {
      const int64_t s = sizes->Get(d);
      if (s < 0 || !checked_mul(numel, uint64_t(s), &numel) || numel > (uint64_t(1) << 40)) {
        return ctx.fail(Error::InvalidProgram, "value %u: bad or too large size in dim %d", vi, d);
      }
      out->sizes[d] = s;
    }
    out->numel = int64_t(numel);
    *nbytes = numel * sizeof(float);
    return Error::Ok;
  }

  Error resolve_value(uint32_t vi) {
    const fb::Value& v = *prog->values()->Get(vi);
    ValueInfo& out = values[vi];
    uint64_t nbytes = 0, end = 0;
    TERN_CHECK_OK(read_shape(vi, v, &out, &nbytes));
    const uint32_t ni = prog->num_inputs(), no = prog->num_outputs();
    switch (v.storage()) {
      case fb::Storage::Input:
      case fb::Storage::Output: {
        const bool input = v.storage() == fb::Storage::Input;
        if (v.index() >= (input ? ni : no)) return ctx.fail(Error::InvalidProgram, "value %u: %s %u out of range", vi, input ? "input" : "output", v.index());
        const Tensor& t = args[(input ? 0 : ni) + v.index()]->tensor;
        // the same elements, possibly seen with other sizes (a [m, k] input read as [m, 1, 1, k])
        if (out.numel != t.numel) {
          return ctx.fail(Error::InvalidProgram, "value %u: %lld elements, delegate %s %u has %lld", vi,
                          (long long)out.numel, input ? "input" : "output", v.index(), (long long)t.numel);
        }
        out.data = t.data_as<float>();
        out.writable = !input;
        return Error::Ok;
      }
      case fb::Storage::Workspace:
        if (v.offset() % alignof(float) != 0 || !checked_add(v.offset(), nbytes, &end) || end > prog->workspace_bytes()) {
          return ctx.fail(Error::InvalidProgram, "value %u: workspace range [%llu, +%llu) outside %llu bytes", vi,
                          (unsigned long long)v.offset(), (unsigned long long)nbytes, (unsigned long long)prog->workspace_bytes());
        }
        out.data = reinterpret_cast<float*>(static_cast<uint8_t*>(args[args.size() - 1]->tensor.data) + v.offset());
        out.writable = true;
        return Error::Ok;
      case fb::Storage::Weights:
        if (v.offset() % 64 != 0 || !checked_add(v.offset(), nbytes, &end) || end > blob_bytes) {
          return ctx.fail(Error::InvalidProgram, "value %u: weights [%llu, +%llu) outside the %llu-byte blob or misaligned",
                          vi, (unsigned long long)v.offset(), (unsigned long long)nbytes, (unsigned long long)blob_bytes);
        }
        out.data = const_cast<float*>(reinterpret_cast<const float*>(blob + v.offset()));
        out.writable = false;
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

  // Value `vi` of op `oi`: in range, `rank` dims (0: any), writable if `out`.
  Error value(uint32_t oi, int64_t vi, int rank, bool out, const ValueInfo** v) {
    if (vi < 0 || uint64_t(vi) >= prog->values()->size()) return ctx.fail(Error::InvalidProgram, "op %u: value %lld out of range", oi, (long long)vi);
    *v = &values[vi];
    if (rank && (*v)->rank != rank) return ctx.fail(Error::InvalidProgram, "op %u: value %lld must be %d-d", oi, (long long)vi, rank);
    if (out && !(*v)->writable) return ctx.fail(Error::InvalidProgram, "op %u: writes value %lld, which is read-only", oi, (long long)vi);
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
  Error prepare_pool(uint32_t oi, const fb::Pool& p, CpuOp* op);
  Error prepare_transpose(uint32_t oi, const fb::Transpose& t, CpuOp* op);
  Error prepare_elementwise(uint32_t oi, const fb::Op& o, CpuOp* op);
  Error prepare_rows(uint32_t oi, const fb::Op& o, CpuOp* op);
  Error prepare_matmul(uint32_t oi, const fb::MatMul& mm, CpuOp* op);
  Error prepare_op(uint32_t oi, CpuOp* op);
  Error make_label(const fb::Op& o, CpuOp* op);
  Error check_broadcast(uint32_t oi, const ValueInfo& b, const ValueInfo& y, int64_t inner, int64_t block);
};

// "Conv: convolution_3+relu_2" (kind, then the nodes it covers), kept for the
// method's life: what profiles and traces show.
Error Loader::make_label(const fb::Op& o, CpuOp* op) {
  static const char* const kKinds[] = {"op", "Conv", "Transpose", "Pool", "Binary", "Unary", "Copy", "LayerNorm",
                                       "Softmax", "MatMul"};
  const int k = static_cast<int>(o.kind_type());
  const char* kind = k > 0 && k <= 9 ? kKinds[k] : kKinds[0];
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
  TERN_CHECK_OK(pair(oi, c.padding(), "padding", 0, &g.ph, &g.pw));
  TERN_CHECK_OK(pair(oi, c.dilation(), "dilation", 1, &g.dh, &g.dw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.c = x->sizes[3];
  g.oh = y->sizes[1], g.ow = y->sizes[2], g.oc = y->sizes[3];
  g.depthwise = c.depthwise();
  if (y->sizes[0] != g.n || g.oh != window_out(g.h, g.kh, g.sh, g.ph, g.dh) || g.ow != window_out(g.w, g.kw, g.sw, g.pw, g.dw) ||
      (g.depthwise && g.oc != g.c) || g.c < 1 || g.oc < 1 || g.c > (1 << 24) || int64_t(g.kh) * g.kw > 1024) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): conv sizes do not fit x [%lld, %lld, %lld, %lld] -> y", oi,
                    op->nodes, (long long)g.n, (long long)g.h, (long long)g.w, (long long)g.c);
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
  op->x = x->data, op->x2 = r ? r->data : nullptr, op->weights = w->data, op->y = y->data, op->numel = y->numel;
  const size_t s = conv_scratch_bytes(g, isa);
  if (s > scratch) scratch = s;
  if (g.c > max_channels) max_channels = g.c;
  return Error::Ok;
}

Error Loader::prepare_pool(uint32_t oi, const fb::Pool& p, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(value(oi, p.x(), 4, false, &x));
  TERN_CHECK_OK(value(oi, p.y(), 4, true, &y));
  PoolGeometry& g = op->pool;
  TERN_CHECK_OK(pair(oi, p.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(pair(oi, p.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(pair(oi, p.padding(), "padding", 0, &g.ph, &g.pw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.c = x->sizes[3];
  g.oh = y->sizes[1], g.ow = y->sizes[2];
  g.max = p.kind() == fb::PoolKind::Max;
  g.count_padding = p.count_padding();
  if (int(p.kind()) < 0 || p.kind() > fb::PoolKind::Average || y->sizes[0] != g.n || y->sizes[3] != g.c ||
      g.oh != window_out(g.h, g.kh, g.sh, g.ph, 1) || g.ow != window_out(g.w, g.kw, g.sw, g.pw, 1) ||
      2 * g.ph > g.kh || 2 * g.pw > g.kw) {
    return ctx.fail(Error::InvalidProgram, "op %u (%s): pool sizes do not fit", oi, op->nodes);
  }
  op->kind = CpuOpKind::Pool;
  op->x = x->data, op->y = y->data, op->numel = y->numel;
  return Error::Ok;
}

Error Loader::prepare_transpose(uint32_t oi, const fb::Transpose& t, CpuOp* op) {
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(value(oi, t.x(), 0, false, &x));
  TERN_CHECK_OK(value(oi, t.y(), 0, true, &y));
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
    TERN_CHECK_OK(value(oi, c->x(), 0, false, &x));
    TERN_CHECK_OK(value(oi, c->y(), 0, true, &y));
    op->kind = CpuOpKind::Copy;
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
  const int64_t panels = (n + kPanel - 1) / kPanel;
  if (!sane || a->numel != bt * m * k || b->numel != bt * k * n || y->numel != bt * m * n ||
      p->numel < bt * panels * kPanel * (1 + k)) {
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
    default: return ctx.fail(Error::InvalidProgram, "op %u: unknown kind %d", oi, int(o.kind_type()));
  }
}

}  // namespace

Result<CpuProgram*> load_cpu_program(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> args,
                                     const Isa& isa) {
  Loader ld{ctx, args, isa};
  TERN_CHECK_OK(ld.parse(payload));
  TERN_CHECK_OK(ld.check_args());
  TERN_CHECK_OK(ld.resolve_values());
  CpuProgram* p = static_cast<CpuProgram*>(ctx.allocate(sizeof(CpuProgram)));
  const uint32_t n = ld.prog->ops()->size();
  CpuOp* ops = static_cast<CpuOp*>(ctx.allocate(sizeof(CpuOp) * (n ? n : 1)));
  if (p == nullptr || ops == nullptr) return Error::OutOfMemory;
  for (uint32_t i = 0; i < n; ++i) TERN_CHECK_OK(ld.prepare_op(i, &ops[i]));
  float* zeros = static_cast<float*>(ctx.allocate(sizeof(float) * size_t(ld.max_channels)));
  if (zeros == nullptr) return Error::OutOfMemory;
  memset(zeros, 0, sizeof(float) * size_t(ld.max_channels));
  ctx.request_scratch(ld.scratch);
  *p = CpuProgram{&isa, ops, n, zeros};
  return p;
}

void run_cpu_program(const CpuProgram& p, RunContext& ctx) {
  for (size_t i = 0; i < p.num_ops; ++i) {
    const CpuOp& op = p.ops[i];
    ctx.begin_step(op.label);
    switch (op.kind) {
      case CpuOpKind::Conv: run_conv(op.conv, *p.isa, op.x, op.weights, p.zeros, op.x2, op.y, op.ep, ctx); break;
      case CpuOpKind::Transpose: run_transpose(op.transpose, op.x, op.y, ctx); break;
      case CpuOpKind::Pool: run_pool(op.pool, op.x, op.y, ctx); break;
      case CpuOpKind::Binary: run_binary(op, ctx); break;
      case CpuOpKind::Unary: run_unary(op, ctx); break;
      case CpuOpKind::Copy:
        if (op.x != op.y) memmove(op.y, op.x, size_t(op.numel) * sizeof(float));
        break;
      case CpuOpKind::LayerNorm: run_layer_norm(op, ctx); break;
      case CpuOpKind::Softmax: run_softmax(op, *p.isa, ctx); break;
      case CpuOpKind::MatMul: run_matmul(op, *p.isa, ctx); break;
    }
    ctx.end_step(op.label);
  }
}

}  // namespace cpu
}  // namespace tern
