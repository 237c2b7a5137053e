// The float matrix products (cpu.fbs MatMul, WLinear): a batched product of
// two activations (b packed at run time) and the weight-only quantized
// linear (its weights dequantized at load), both through run_conv.
#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

// The parameters of a MatMul (a WLinear's are a ConvOp: it runs as a Conv).
struct MatMulOp {
  const float* x;   // a [batch, m, k]
  const float* x2;  // b [batch, k, n]
  float* y;         // [batch, m, n]
  int64_t numel;    // of y
  int64_t batch, m, k, n;
  float* packed;    // b packed at run time (workspace)
};

Error prepare_MatMul(Loader& ld, uint32_t oi, const fb::MatMul& mm, CpuOp* op) {
  MatMulOp* par = ld.params<MatMulOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *a = nullptr, *b = nullptr, *y = nullptr, *p = nullptr;
  TERN_CHECK_OK(ld.value(oi, mm.a(), 0, false, &a));
  TERN_CHECK_OK(ld.value(oi, mm.b(), 0, false, &b));
  TERN_CHECK_OK(ld.value(oi, mm.y(), 0, true, &y));
  TERN_CHECK_OK(ld.value(oi, mm.packed(), 0, true, &p));
  int64_t bt = 0, m = 0, k = 0, n = 0;
  TERN_CHECK_OK(ld.field(oi, mm.exprs(), 0, mm.batch(), &bt));
  TERN_CHECK_OK(ld.field(oi, mm.exprs(), 1, mm.m(), &m));
  TERN_CHECK_OK(ld.field(oi, mm.exprs(), 2, mm.k(), &k));
  TERN_CHECK_OK(ld.field(oi, mm.exprs(), 3, mm.n(), &n));
  TERN_CHECK_OK(ld.sizes(oi, *op, "matmul sizes do not fit its values", {{"batch", bt}, {"m", m}, {"k", k}, {"n", n}},
                         int64_t(1) << 24));
  const int64_t panels = (n + kPanel - 1) / kPanel;
  const int64_t need = elements({bt, panels, kPanel, 1 + k});
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, a->numel == elements({bt, m, k}));
  TERN_CPU_NEED(failed, b->numel == elements({bt, k, n}));
  TERN_CPU_NEED(failed, y->numel == elements({bt, m, n}));
  TERN_CPU_NEED(failed, need >= 0);
  TERN_CPU_NEED(failed, p->numel >= need);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): matmul sizes do not fit its values", oi, op->nodes);
  }
  par->x = a->data, par->x2 = b->data, par->y = y->data, par->packed = p->data, par->numel = y->numel;
  par->batch = bt, par->m = m, par->k = k, par->n = n;
  ConvGeometry g{};
  g.n = m, g.h = g.w = g.oh = g.ow = 1, g.c = k, g.oc = n, g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  const size_t s = conv_scratch_bytes(g, ld.isa);
  ld.need_scratch(s);
  return Error::Ok;
}

void run_MatMul(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const MatMulOp& o = params_of<MatMulOp>(cpu_op);
  const Isa& isa = *p.isa;
  const int64_t panels = (o.n + kPanel - 1) / kPanel, panel_floats = kPanel * (1 + o.k);
  // b [batch][k][n] -> [batch][panel][16 zeros (bias)][k][16], columns past n zero
  ctx.parallel_for(o.batch * panels, 1, [&](RunContext&, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bt = u / panels, p = u % panels, j0 = p * kPanel, cols = o.n - j0 < kPanel ? o.n - j0 : kPanel;
      float* dst = o.packed + u * panel_floats;
      const float* src = o.x2 + bt * o.k * o.n + j0;
      memset(dst, 0, sizeof(float) * kPanel);
      for (int64_t kk = 0; kk < o.k; ++kk) {
        float* row = dst + kPanel * (1 + kk);
        for (int64_t j = 0; j < kPanel; ++j) row[j] = j < cols ? src[kk * o.n + j] : 0.f;
      }
    }
  });
  ConvGeometry g{};
  g.n = o.m, g.h = g.w = g.oh = g.ow = 1, g.c = o.k, g.oc = o.n, g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  const Epilogue ep;
  for (int64_t bt = 0; bt < o.batch; ++bt) {
    run_conv(g, isa, o.x + bt * o.m * o.k, o.packed + bt * panels * panel_floats, o.x /* no padding taps */,
             nullptr, o.y + bt * o.m * o.n, ep, ctx);
  }
}

namespace {

// A weight-only linear's int4 (two a byte, low nibble first) or int8
// weights [n, k], dequantized ((q - zero point) * scale per group of k)
// into the packed float panels of pack_conv_weights' layout, bias first.
void dequantize(const uint8_t* bytes, bool int4, bool is_signed, const float* scales, const float* zero_points,
                const float* bias, int64_t n, int64_t k, int64_t group, float* packed) {
  const int64_t groups = k / group;
  const size_t panel_floats = size_t(kPanel) * (1 + size_t(k));
  memset(packed, 0, size_t((n + kPanel - 1) / kPanel) * panel_floats * sizeof(float));
  for (int64_t o = 0; o < n; ++o) {
    float* panel = packed + (o / kPanel) * panel_floats;
    const int64_t lane = o % kPanel;
    panel[lane] = bias ? bias[o] : 0.f;
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
      panel[kPanel * (1 + c) + lane] = (q - (zero_points ? zero_points[p] : 0.f)) * scales[p];
    }
  }
}

}  // namespace

Error prepare_WLinear(Loader& ld, uint32_t oi, const fb::WLinear& l, CpuOp* op) {
  ConvOp* par = ld.params<ConvOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *sc = nullptr, *zp = nullptr, *b = nullptr;
  const bool int4 = l.bits() == 4;
  TERN_CHECK_OK(ld.value(oi, l.x(), 2, false, &x));
  TERN_CHECK_OK(ld.value(oi, l.y(), 2, true, &y));
  // int4: uint8 bytes, read as int8 values' bytes
  TERN_CHECK_OK(ld.constant_of(oi, l.weights(), 2, true, "weights", &w));
  TERN_CHECK_OK(ld.constant_of(oi, l.scales(), 0, false, "scales", &sc));
  if (l.zero_points() >= 0) TERN_CHECK_OK(ld.constant_of(oi, l.zero_points(), 0, false, "zero points", &zp));
  if (l.bias() >= 0) TERN_CHECK_OK(ld.constant_of(oi, l.bias(), 1, false, "bias", &b));
  const int64_t m = x->sizes[0], k = x->sizes[1], n = y->sizes[1];
  const int64_t group = int4 ? l.group() : k;
  const int64_t groups = group >= 1 ? k / group : 0;
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, l.bits() == 4 || l.bits() == 8);
  TERN_CPU_NEED(failed, m >= 1);
  TERN_CPU_NEED(failed, k >= 1);
  TERN_CPU_NEED(failed, n >= 1);
  TERN_CPU_NEED(failed, k <= (1 << 24));
  TERN_CPU_NEED(failed, n <= (1 << 24));
  TERN_CPU_NEED(failed, y->sizes[0] == m);
  TERN_CPU_NEED(failed, w->sizes[0] == n);
  TERN_CPU_NEED(failed, w->sizes[1] == (int4 ? k / 2 : k));
  TERN_CPU_NEED(failed, !int4 || k % 2 == 0);
  TERN_CPU_NEED(failed, group >= 1);
  TERN_CPU_NEED(failed, k % group == 0);
  TERN_CPU_NEED(failed, sc->numel == n * groups);
  TERN_CPU_NEED(failed, zp == nullptr || zp->numel == n * groups);
  TERN_CPU_NEED(failed, b == nullptr || b->numel == n);
  TERN_CPU_NEED(failed, l.qmin() >= (int4 ? -8 : -128));
  TERN_CPU_NEED(failed, l.qmin() <= (int4 ? 15 : 127));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): weight-only linear [%lld, %lld] -> %lld (%d bits, group "
                     "%lld): its weights, scales, zero points or bias do not fit", oi, op->nodes, (long long)m,
                     (long long)k, (long long)n, l.bits(), (long long)l.group());
  }
  ConvGeometry& g = par->conv;
  g = ConvGeometry{};
  g.n = m, g.h = g.w = g.oh = g.ow = 1, g.c = k, g.oc = n;
  g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  // dequantized straight into the packed float panels (pack_conv_weights' layout)
  float* packed = static_cast<float*>(ld.allocate(conv_packed_floats(g) * sizeof(float)));
  if (packed == nullptr) return Error::OutOfMemory;
  if (!ld.reshaping) {  // prepared again at new sizes: the block holds load's weights
    dequantize(reinterpret_cast<const uint8_t*>(w->data), int4, l.qmin() < 0, sc->data, zp ? zp->data : nullptr,
               b ? b->data : nullptr, n, k, group, packed);
  }
  par->x = x->data, par->x2 = nullptr, par->weights = packed, par->y = y->data, par->numel = y->numel;
  par->ep = Epilogue{};
  const size_t s = conv_scratch_bytes(g, ld.isa);
  ld.need_scratch(s);
  const int64_t zeros = int64_t(conv_zero_floats(g));
  ld.need_zeros(zeros);
  return Error::Ok;
}

// a weight-only linear runs as the 1x1 convolution its weights were dequantized for
void run_WLinear(const CpuOp& op, const CpuProgram& p, RunContext& ctx) { run_Conv(op, p, ctx); }

}  // namespace cpu
}  // namespace tern
