// The convolution family (cpu.fbs Conv, WinogradInput, WinogradOutput; row
// chains): each kind's payload reading and checks, then its run. The
// convolution itself is conv.h's run_conv.
//
// Winograd F(2x2, 3x3) (cpu.fbs, WinogradInput / WinogradOutput): the input
// and output transforms around the 16 1x1 convolutions (the igemm
// microkernels) that make a 3x3 stride-1 convolution. With
//
//   B^T = | 1  0 -1  0 |    A^T = | 1  1  1  0 |    G = | 1    0    0   |
//         | 0  1  1  0 |          | 0  1 -1 -1 |        | 1/2  1/2  1/2 |
//         | 0 -1  1  0 |                               | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |                               | 0    0    1   |
//
// a 2 x 2 output tile is A^T [(G g G^T) . (B^T d B)] A for its 4 x 4 input
// patch d and the 3 x 3 kernel g. G g G^T is computed here at load from the
// kernel the file holds (Conv.winograd_element, winograd_weights below, with
// conv.h's pack_winograd_weights), or, in payloads before version 5 and with
// CpuOptions(winograd_expanded_weights), at export (python/tern/backends/cpu/
// convolution.py, winograd_weights) and used in place. v and m hold element t of every
// tile together (16 blocks of [tiles][channels], 16 floats apart so that
// the 16 rows a transform touches do not fall in the same cache sets), so
// each of the 16 GEMMs reads and writes contiguous rows. The transforms are microkernels
// (ukernels/common/f32_winograd.h); each tile is done by one thread: the
// same bits for any thread count.
#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

namespace {

constexpr int64_t kMinTilesPerThread = 8;

int64_t tiles_of(int64_t size) { return (size + 1) / 2; }

int64_t winograd_block(int64_t tiles, int64_t channels) { return tiles * channels + 16; }

size_t winograd_scratch_bytes(int64_t oc) { return size_t(oc) * sizeof(float); }

// A pointwise convolution a chain may run: 1x1, stride 1, no padding,
// whole dense x and y.
bool chain_pointwise(const ConvGeometry& g) {
  return !g.depthwise && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.dh == 1 &&
         g.dw == 1 && g.oh == g.h && g.ow == g.w && g.x_stride == g.c && g.y_stride == g.oc;
}

// Whether Conv b reads exactly Conv a's output.
bool reads_output(const ConvOp& a, const ConvOp& b) {
  return b.x == a.y && b.conv.n == a.conv.n && b.conv.h == a.conv.oh && b.conv.w == a.conv.ow && b.conv.c == a.conv.oc;
}

Error packed_weights(Loader& ld, uint32_t oi, const CpuOp& op, const ValueInfo& w, const ConvGeometry& g);
Error winograd_weights(Loader& ld, uint32_t oi, const CpuOp& op, int32_t t, uint32_t vi, const ConvGeometry& g,
                       const float** out);

// A chain's head runs the chain (run_conv_chain); the Convs it covers, nothing.
void run_chain(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const ConvOp& op = params_of<ConvOp>(cpu_op);
  run_conv_chain(op.stages, op.chain, *p.isa, op.x, p.zeros, op.y, ctx);
}

}  // namespace

Error prepare_Conv(Loader& ld, uint32_t oi, const fb::Conv& c, CpuOp* op) {
  ConvOp* par = ld.params<ConvOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *r = nullptr;
  TERN_CHECK_OK(ld.value(oi, c.x(), 4, false, &x));
  TERN_CHECK_OK(ld.value(oi, c.y(), 4, true, &y));
  const int32_t element = c.winograd_element();
  if (element == -1) {
    TERN_CHECK_OK(ld.value(oi, c.weights(), 1, false, &w));
  } else {  // a 3x3 kernel load reads: in the payload
    TERN_CHECK_OK(ld.constant_of(oi, c.weights(), 1, false, "winograd kernel", &w));
  }
  if (c.residual() >= 0) TERN_CHECK_OK(ld.value(oi, c.residual(), 4, false, &r));
  ConvGeometry& g = par->conv;
  TERN_CHECK_OK(ld.pair(oi, c.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(ld.pair(oi, c.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(ld.pair(oi, c.padding(), "padding", -(1 << 16), &g.ph, &g.pw));
  int32_t pb = g.ph, pr = g.pw;  // after: bottom, right
  if (c.padding_end() != nullptr) TERN_CHECK_OK(ld.pair(oi, c.padding_end(), "padding_end", -(1 << 16), &pb, &pr));
  TERN_CHECK_OK(ld.pair(oi, c.dilation(), "dilation", 1, &g.dh, &g.dw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.x_stride = x->sizes[3];
  g.oh = y->sizes[1], g.ow = y->sizes[2], g.y_stride = y->sizes[3];
  g.c = c.in_channels() ? c.in_channels() : g.x_stride;
  g.oc = c.out_channels() ? c.out_channels() : g.y_stride;
  g.depthwise = c.depthwise();
  const int64_t xo = c.x_offset(), yo = c.y_offset();
  const bool dense = xo == 0 && yo == 0 && g.c == g.x_stride && g.oc == g.y_stride;
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, xo >= 0);
  TERN_CPU_NEED(failed, yo >= 0);
  TERN_CPU_NEED(failed, g.c >= 1);
  TERN_CPU_NEED(failed, g.oc >= 1);
  TERN_CPU_NEED(failed, g.c <= g.x_stride - xo);
  TERN_CPU_NEED(failed, g.oc <= g.y_stride - yo);
  TERN_CPU_NEED(failed, dense || !g.depthwise);
  TERN_CPU_NEED(failed, dense || r == nullptr);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): channel slices [%lld, +%lld) of %lld -> [%lld, +%lld) of %lld "
                     "do not fit (or are not whole for a depthwise convolution or a residual)", oi, op->nodes,
                     (long long)xo, (long long)c.in_channels(), (long long)g.x_stride, (long long)yo,
                     (long long)c.out_channels(), (long long)g.y_stride);
  }
  // every tap is bounds-checked, so any output size is safe; depthwise
  // convolutions (whose row kernel assumes it) have the one their window gives
  failed = nullptr;
  TERN_CPU_NEED(failed, y->sizes[0] == g.n);
  TERN_CPU_NEED(failed, g.n >= 1);
  TERN_CPU_NEED(failed, g.h >= 1);
  TERN_CPU_NEED(failed, g.w >= 1);
  TERN_CPU_NEED(failed, g.oh >= 1);
  TERN_CPU_NEED(failed, g.ow >= 1);
  TERN_CPU_NEED(failed, !g.depthwise || g.oh == window_out(g.h, g.kh, g.sh, g.ph, pb, g.dh));
  TERN_CPU_NEED(failed, !g.depthwise || g.ow == window_out(g.w, g.kw, g.sw, g.pw, pr, g.dw));
  TERN_CPU_NEED(failed, !g.depthwise || g.ph >= 0);
  TERN_CPU_NEED(failed, !g.depthwise || g.pw >= 0);
  TERN_CPU_NEED(failed, !g.depthwise || pb >= 0);
  TERN_CPU_NEED(failed, !g.depthwise || pr >= 0);
  TERN_CPU_NEED(failed, !g.depthwise || g.oc == g.c);
  TERN_CPU_NEED(failed, g.c <= (1 << 24));
  TERN_CPU_NEED(failed, int64_t(g.kh) * g.kw <= 1024);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): conv sizes do not fit x [%lld, %lld, %lld, %lld] -> y", oi,
                     op->nodes, (long long)g.n, (long long)g.h, (long long)g.w, (long long)g.c);
  }
  if (element != -1) {
    TERN_CHECK_OK(winograd_weights(ld, oi, *op, element, c.weights(), g, &par->weights));
  } else {
    TERN_CHECK_OK(packed_weights(ld, oi, *op, *w, g));
    par->weights = w->data;
  }
  TERN_CPU_CHECK(ld, r == nullptr || memcmp(r->sizes, y->sizes, sizeof(int64_t) * 4) == 0,
                 "op %u: residual sizes differ from the output's", oi);
  TERN_CHECK_OK(ld.epilogue(oi, c.activation(), c.min(), c.max(), &par->ep));
  par->fuse_next = c.fuse_next();
  par->x = x->data + xo, par->x2 = r ? r->data : nullptr, par->y = y->data + yo;
  par->numel = y->numel;
  const size_t s = conv_scratch_bytes(g, ld.isa);
  ld.need_scratch(s);
  const int64_t zeros = int64_t(conv_zero_floats(g));
  ld.need_zeros(zeros);
  return Error::Ok;
}

namespace {

// A Conv's packed weights value w: exactly the floats its geometry packs.
Error packed_weights(Loader& ld, uint32_t oi, const CpuOp& op, const ValueInfo& w, const ConvGeometry& g) {
  // The packed floats, overflow-checked: an output channel count near 2^40
  // would wrap conv_packed_floats and let a short weights value pass.
  uint64_t packed = 0;
  const uint64_t panels = (uint64_t(g.depthwise ? g.c : g.oc) + 15) / 16;  // of 16 channels (kPanel)
  const uint64_t taps = uint64_t(g.kh) * uint64_t(g.kw) * uint64_t(g.depthwise ? 1 : g.c);
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, checked_mul(panels * 16, 1 + taps, &packed));
  TERN_CPU_NEED(failed, packed <= (uint64_t(1) << 40));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): the packed weights of %lld -> %lld channels do not fit 2^40 floats", oi,
                     op.nodes, (long long)g.c, (long long)g.oc);
  }
  TERN_CPU_CHECK(ld, uint64_t(w.numel) == conv_packed_floats(g),
                 "op %u: %lld packed weight floats, the geometry needs %zu", oi, (long long)w.numel,
                 conv_packed_floats(g));
  return Error::Ok;
}

// Conv.winograd_element t: the packed weights of element t of G g G^T for
// the 3x3 kernel g in value vi, computed into persistent memory the first
// time a Conv reads vi as a c -> oc kernel (ValueInfo::winograd).
Error winograd_weights(Loader& ld, uint32_t oi, const CpuOp& op, int32_t t, uint32_t vi, const ConvGeometry& g,
                       const float** out) {
  ValueInfo& w = ld.values[vi];  // in range: prepare_Conv read it
  uint64_t floats = 0;
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, t >= 0);
  TERN_CPU_NEED(failed, t < 16);
  TERN_CPU_NEED(failed, g.kh == 1);
  TERN_CPU_NEED(failed, g.kw == 1);
  TERN_CPU_NEED(failed, !g.depthwise);
  TERN_CPU_NEED(failed, w.numel == elements({g.oc, g.c, 9}));
  // 16 elements of ceil(oc / 16) panels of 16 * (1 + c) floats
  TERN_CPU_NEED(failed, checked_mul(uint64_t(g.oc + 15) / 16 * 256, uint64_t(g.c) + 1, &floats));
  TERN_CPU_NEED(failed, floats <= (uint64_t(1) << 40));
  TERN_CPU_NEED(failed, floats <= SIZE_MAX / sizeof(float));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): winograd_element %d needs a 1x1 Conv, not depthwise, whose weights (value "
                     "%u, %lld floats) are its 3x3 kernel [oc %lld][c %lld][3][3]", oi, op.nodes, t, vi,
                     (long long)w.numel, (long long)g.oc, (long long)g.c);
  }
  if (w.winograd == nullptr || w.winograd_c != g.c) {
    float* packed = static_cast<float*>(ld.ctx.allocate(size_t(floats) * sizeof(float)));
    if (packed == nullptr) return Error::OutOfMemory;
    pack_winograd_weights(g.c, g.oc, w.data, packed);
    w.winograd = packed, w.winograd_c = g.c;
  }
  *out = w.winograd + size_t(t) * winograd_element_floats(g.c, g.oc);
  return Error::Ok;
}

}  // namespace

void run_Conv(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const ConvOp& op = params_of<ConvOp>(cpu_op);
  run_conv(op.conv, *p.isa, op.x, op.weights, p.zeros, op.x2, op.y, op.ep, ctx);
}

// ops[oi] has fuse_next: makes it run, as one op, the chain of the Convs after it
// (cpu.fbs Conv.fuse_next), or fails naming what does not fit.
Error link_chain(Loader& ld, uint32_t oi, CpuOp* ops, uint32_t n) {
  // the Convs' parameters: ops[oi]'s, the next op's and the one after (nullptr: none, or not a Conv)
  ConvOp* c[3] = {};
  for (uint32_t i = 0; i < 3 && oi + i < n; ++i) {
    if (ops[oi + i].kind == CpuOpKind::Conv) c[i] = static_cast<ConvOp*>(ops[oi + i].params);
  }
  ConvOp& a = *c[0];
  const char* why = !chain_pointwise(a.conv) ? "it is not a pointwise Conv (1x1, stride 1, no padding, dense x and y)"
                    : a.x2 != nullptr        ? "it has a residual"
                    : oi + 1 >= n            ? "it is the last op"
                    : c[1] == nullptr        ? "the next op is not a Conv"
                    : !c[1]->conv.depthwise  ? "the next Conv is not depthwise"
                    : !reads_output(a, *c[1]) ? "the next Conv does not read exactly its output"
                                              : nullptr;
  if (why != nullptr) {
    return ld.ctx.fail(Error::InvalidProgram, "op %u (%s): fuse_next needs a pointwise Conv without a residual followed "
                       "by a depthwise Conv of its output: %s", oi, ops[oi].nodes, why);
  }
  int count = 2;
  if (c[1]->fuse_next) {
    why = oi + 2 >= n                       ? "it is the last op"
          : c[2] == nullptr                 ? "the next op is not a Conv"
          : !chain_pointwise(c[2]->conv)    ? "the next Conv is not pointwise (1x1, stride 1, no padding, dense x and y)"
          : !reads_output(*c[1], *c[2])     ? "the next Conv does not read exactly its output"
                                            : nullptr;
    if (why != nullptr) {
      return ld.ctx.fail(Error::InvalidProgram, "op %u (%s): fuse_next needs a pointwise Conv of its output next: %s",
                         oi + 1, ops[oi + 1].nodes, why);
    }
    count = 3;
  }
  ConvStage* stages = static_cast<ConvStage*>(ld.allocate(sizeof(ConvStage) * size_t(count)));
  if (stages == nullptr) return Error::OutOfMemory;
  for (int i = 0; i < count; ++i) stages[i] = {c[i]->conv, c[i]->weights, c[i]->x2, c[i]->ep};
  const size_t s = conv_chain_scratch_bytes(stages, count, ld.isa);
  ld.need_scratch(s);
  // what profiles call it: the stages' labels joined
  size_t len = 1;
  for (int i = 0; i < count; ++i) len += strlen(ops[oi + i].label) + 3;
  char* label = static_cast<char*>(ld.allocate(len));
  if (label == nullptr) return Error::OutOfMemory;
  label[0] = 0;
  for (int i = 0; i < count; ++i) {
    if (i > 0) strcat(label, " > ");
    strcat(label, ops[oi + i].label);
  }
  a.chain = count, a.stages = stages, a.y = c[count - 1]->y;
  ops[oi].run = run_chain, ops[oi].label = label;
  for (int i = 1; i < count; ++i) ops[oi + i].run = nullptr;
  return Error::Ok;
}

Error prepare_WinogradInput(Loader& ld, uint32_t oi, const fb::WinogradInput& wi, CpuOp* op) {
  ConvOp* par = ld.params<ConvOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *v = nullptr;
  TERN_CHECK_OK(ld.value(oi, wi.x(), 4, false, &x));
  TERN_CHECK_OK(ld.value(oi, wi.v(), 0, true, &v));
  ConvGeometry& g = par->conv;
  TERN_CHECK_OK(ld.pair(oi, wi.padding(), "padding", -(1 << 16), &g.ph, &g.pw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.c = x->sizes[3], g.oh = wi.oh(), g.ow = wi.ow();
  const int64_t limit = int64_t(1) << 24;
  // oh and ow come from the payload: bounded before they are used.
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, g.c >= 1);
  TERN_CPU_NEED(failed, g.oh >= 1);
  TERN_CPU_NEED(failed, g.ow >= 1);
  TERN_CPU_NEED(failed, g.oh <= limit);
  TERN_CPU_NEED(failed, g.ow <= limit);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): winograd input output size %lld x %lld, channels %lld: each "
                     "must be in [1, 2^24]", oi, op->nodes, (long long)g.oh, (long long)g.ow, (long long)g.c);
  }
  const int64_t rows = elements({g.n, (g.oh + 1) / 2, (g.ow + 1) / 2, g.c});  // tiles * c
  failed = nullptr;
  TERN_CPU_NEED(failed, rows >= 0);
  TERN_CPU_NEED(failed, v->numel == 16 * winograd_block(rows / g.c, g.c));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): winograd input sizes do not fit x and v", oi, op->nodes);
  }
  par->x = x->data, par->y = v->data, par->numel = v->numel;
  ld.need_zeros(g.c);
  return Error::Ok;
}

void run_WinogradInput(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const ConvOp& o = params_of<ConvOp>(cpu_op);
  const Isa& isa = *p.isa;
  const float* zeros = p.zeros;
  const ConvGeometry& g = o.conv;
  const int64_t th = tiles_of(g.oh), tw = tiles_of(g.ow), tiles = g.n * th * tw;
  ctx.parallel_for(tiles, kMinTilesPerThread, [&](RunContext&, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (th * tw), i = (t / tw) % th, j = t % tw;
      const float* in[16];
      for (int r = 0; r < 4; ++r) {
        const int64_t iy = 2 * i - g.ph + r;
        for (int s = 0; s < 4; ++s) {
          const int64_t ix = 2 * j - g.pw + s;
          in[4 * r + s] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? o.x + ((b * g.h + iy) * g.w + ix) * g.c : zeros;
        }
      }
      isa.winograd_in(in, size_t(g.c), o.y + t * g.c, size_t(winograd_block(tiles, g.c)));
    }
  });
}

Error prepare_WinogradOutput(Loader& ld, uint32_t oi, const fb::WinogradOutput& wo, CpuOp* op) {
  ConvOp* par = ld.params<ConvOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *m = nullptr, *y = nullptr, *b = nullptr, *r = nullptr;
  TERN_CHECK_OK(ld.value(oi, wo.m(), 0, false, &m));
  TERN_CHECK_OK(ld.value(oi, wo.y(), 4, true, &y));
  if (wo.bias() >= 0) TERN_CHECK_OK(ld.value(oi, wo.bias(), 0, false, &b));
  if (wo.residual() >= 0) TERN_CHECK_OK(ld.value(oi, wo.residual(), 4, false, &r));
  ConvGeometry& g = par->conv;
  g.n = y->sizes[0], g.oh = y->sizes[1], g.ow = y->sizes[2], g.oc = y->sizes[3];
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, g.oc >= 1);
  TERN_CPU_NEED(failed, g.oh >= 1);
  TERN_CPU_NEED(failed, g.ow >= 1);
  TERN_CPU_NEED(failed, g.oh <= (1 << 24));
  TERN_CPU_NEED(failed, g.ow <= (1 << 24));
  TERN_CPU_NEED(failed, m->numel == 16 * winograd_block(g.n * ((g.oh + 1) / 2) * ((g.ow + 1) / 2), g.oc));
  TERN_CPU_NEED(failed, !b || b->numel == g.oc);
  TERN_CPU_NEED(failed, !r || memcmp(r->sizes, y->sizes, sizeof(int64_t) * 4) == 0);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): winograd output sizes do not fit m, y, bias and residual", oi,
                     op->nodes);
  }
  TERN_CHECK_OK(ld.epilogue(oi, wo.activation(), wo.min(), wo.max(), &par->ep));
  par->x = m->data, par->y = y->data, par->x2 = r ? r->data : nullptr, par->bias = b ? b->data : nullptr;
  par->numel = y->numel;
  ld.need_zeros(g.oc);
  const size_t s = winograd_scratch_bytes(g.oc);
  ld.need_scratch(s);
  return Error::Ok;
}

void run_WinogradOutput(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const ConvOp& o = params_of<ConvOp>(cpu_op);
  const Isa& isa = *p.isa;
  const float* zeros = p.zeros;
  const ConvGeometry& g = o.conv;
  const int64_t th = tiles_of(g.oh), tw = tiles_of(g.ow), tiles = g.n * th * tw, oc = g.oc;
  const Epilogue& ep = o.ep;
  const bool clamp = ep.activation == Activation::Clamp;
  const MinMax mm = clamp ? ep.clamp : MinMax{-__builtin_inff(), __builtin_inff()};
  ctx.parallel_for(tiles, kMinTilesPerThread, [&](RunContext& c, int64_t t0, int64_t t1) {
    float* spare = static_cast<float*>(c.scratch());  // outputs past y's edge go here
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (th * tw), i = (t / tw) % th, j = t % tw;
      float* out[4];
      const float* res[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t oy = 2 * i + k / 2, ox = 2 * j + k % 2;
        const bool inside = oy < g.oh && ox < g.ow;
        const int64_t at = ((b * g.oh + oy) * g.ow + ox) * oc;
        out[k] = inside ? o.y + at : spare;
        res[k] = inside && o.x2 ? o.x2 + at : zeros;
      }
      isa.winograd_out(o.x + t * oc, size_t(winograd_block(tiles, oc)), size_t(oc), o.bias ? o.bias : zeros, out, res, mm);
      if (!clamp && ep.activation != Activation::None) {
        for (int k = 0; k < 4; ++k)
          if (out[k] != spare) apply_activation(ep, out[k], size_t(oc));
      }
    }
  });
}

}  // namespace cpu
}  // namespace tern
