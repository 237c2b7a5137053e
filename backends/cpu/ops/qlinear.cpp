// The int8 convolution and linear layers (cpu.fbs QConv, QLinear): int8
// activations times packed int8 weights through qconv.h's drivers, the
// requantization computed at load (QConv) or from the quantization
// parameters a DynamicQuantize wrote (QLinear, float32 output).
#include <cmath>
#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

// The parameters of a QConv or QLinear.
struct QLinearOp {
  const float* x;           // int8 values
  float* y;                 // QConv: int8 values; QLinear: float32
  int64_t numel;            // of y
  Qs8Conv qconv;
  const int8_t* qzeros;     // QConv: what padding taps read (x_zero_point, c rounded up to 4 bytes)
  float* qparams;           // QLinear: x's scale, zero point (a DynamicQuantize's)
  const int32_t* wsums;     // QLinear: the weight sum of each output channel
  const float* w_scales;    // QLinear: per output channel
  float* rescale;           // QLinear: init (as int32) and scale, each qs8_channels, filled at each run
};

Error prepare_QConv(Loader& ld, uint32_t oi, const fb::QConv& c, CpuOp* op) {
  QLinearOp* par = ld.params<QLinearOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr, *w = nullptr, *ws = nullptr, *b = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, c.x(), 4, false, true, &x));
  TERN_CHECK_OK(ld.value_of(oi, c.y(), 4, true, true, &y));
  TERN_CHECK_OK(ld.constant_of(oi, c.weights(), 1, true, "weights", &w));
  TERN_CHECK_OK(ld.constant_of(oi, c.w_scales(), 1, false, "w_scales", &ws));
  if (c.bias() >= 0) TERN_CHECK_OK(ld.constant_of(oi, c.bias(), 1, false, "bias", &b));
  ConvGeometry& g = par->qconv.g;
  g = ConvGeometry{};
  TERN_CHECK_OK(ld.pair(oi, c.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(ld.pair(oi, c.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(ld.pair(oi, c.padding(), "padding", 0, &g.ph, &g.pw));
  int32_t pb = g.ph, pr = g.pw;  // after: bottom, right
  if (c.padding_end() != nullptr) TERN_CHECK_OK(ld.pair(oi, c.padding_end(), "padding_end", 0, &pb, &pr));
  TERN_CHECK_OK(ld.pair(oi, c.dilation(), "dilation", 1, &g.dh, &g.dw));
  g.n = x->sizes[0], g.h = x->sizes[1], g.w = x->sizes[2], g.c = x->sizes[3];
  g.oh = y->sizes[1], g.ow = y->sizes[2], g.oc = y->sizes[3];
  g.depthwise = c.depthwise();
  // The int32 accumulators hold any sum of ks * kc4 <= 2^15 products of
  // int8 values, with its zero-point corrections (ld.qs8.h).
  const int64_t ks = int64_t(g.kh) * g.kw, kc4 = g.depthwise ? 1 : (g.c + 3) / 4 * 4;
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, y->sizes[0] == g.n);
  TERN_CPU_NEED(failed, g.n >= 1);
  TERN_CPU_NEED(failed, g.h >= 1);
  TERN_CPU_NEED(failed, g.w >= 1);
  TERN_CPU_NEED(failed, g.oh >= 1);
  TERN_CPU_NEED(failed, g.ow >= 1);
  TERN_CPU_NEED(failed, g.oh == window_out(g.h, g.kh, g.sh, g.ph, pb, g.dh));
  TERN_CPU_NEED(failed, g.ow == window_out(g.w, g.kw, g.sw, g.pw, pr, g.dw));
  TERN_CPU_NEED(failed, g.c >= 1);
  TERN_CPU_NEED(failed, g.oc >= 1);
  TERN_CPU_NEED(failed, g.c <= (1 << 24));
  TERN_CPU_NEED(failed, g.oc <= (1 << 24));
  TERN_CPU_NEED(failed, ks <= 1024);
  TERN_CPU_NEED(failed, ks * kc4 <= (1 << 15));
  TERN_CPU_NEED(failed, !g.depthwise || g.oc == g.c);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): int8 conv sizes do not fit x [%lld, %lld, %lld, %lld] -> y "
                     "(at most 2^15 products per output)", oi, op->nodes, (long long)g.n, (long long)g.h,
                     (long long)g.w, (long long)g.c);
  }
  // c, oc < 2^24, ks * kc4 <= 2^15: qs8_packed_bytes does not overflow
  TERN_CPU_CHECK(ld, uint64_t(w->numel) == qs8_packed_bytes(g), "op %u: %lld packed int8 weights, the geometry needs %zu",
                 oi, (long long)w->numel, qs8_packed_bytes(g));
  TERN_CPU_CHECK(ld, ws->numel == g.oc, "op %u: w_scales and bias need %lld floats each", oi, (long long)g.oc);
  TERN_CPU_CHECK(ld, b == nullptr || b->numel == g.oc, "op %u: w_scales and bias need %lld floats each", oi,
                 (long long)g.oc);
  TERN_CHECK_OK(ld.quantization(oi, *op, c.x_scale(), c.x_zero_point(), c.y_scale(), c.y_zero_point(), false,
                                 c.qmin(), c.qmax()));
  for (int64_t j = 0; j < g.oc; ++j) {
    TERN_CPU_CHECK(ld, std::isfinite(ws->data[j]), "op %u: w_scales %lld is not finite", oi, (long long)j);
    TERN_CPU_CHECK(ld, b == nullptr || std::isfinite(b->data[j]), "op %u: bias %lld is not finite", oi, (long long)j);
  }
  // requantization, computed once, here (qconv.h)
  const size_t nch = size_t(qs8_channels(g));
  int32_t* init = static_cast<int32_t*>(ld.allocate(sizeof(int32_t) * nch));
  float* scale = static_cast<float*>(ld.allocate(sizeof(float) * nch));
  float* offset = static_cast<float*>(ld.allocate(sizeof(float) * nch));
  const size_t zero_bytes = size_t(g.c + 3) / 4 * 4;  // what run_qs8_conv's padding taps read
  int8_t* zeros = static_cast<int8_t*>(ld.allocate(zero_bytes));
  if (init == nullptr || scale == nullptr || offset == nullptr || zeros == nullptr) return Error::OutOfMemory;
  const int8_t* packed = reinterpret_cast<const int8_t*>(w->data);
  // prepared again at new sizes (reshaping): the blocks hold load's tables already
  const int64_t bad = ld.reshaping ? -1 : qs8_requant(g, packed, c.x_scale(), c.x_zero_point(), ws->data,
                                                      b ? b->data : nullptr, c.y_scale(), c.y_zero_point(), ld.qs8,
                                                      init, scale, offset);
  TERN_CPU_CHECK(ld, bad < 0, "op %u (%s): output channel %lld's requantization (x_scale %g * w_scale %g / y_scale %g, "
                 "bias %g / y_scale) is not finite or passes 2^64", oi, op->nodes, (long long)bad, double(c.x_scale()),
                 double(ws->data[bad]), double(c.y_scale()), b ? double(b->data[bad]) : 0.0);
  memset(zeros, c.x_zero_point(), zero_bytes);
  par->qconv.packed = packed, par->qconv.init = init, par->qconv.scale = scale, par->qconv.offset = offset;
  par->qconv.qmin = float(c.qmin()), par->qconv.qmax = float(c.qmax());
  par->qzeros = zeros;
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  const size_t s = qs8_conv_scratch_bytes(g, ld.qs8);
  ld.need_scratch(s);
  return Error::Ok;
}

void run_QConv(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const QLinearOp& op = params_of<QLinearOp>(cpu_op);
  run_qs8_conv(op.qconv, *p.qs8, reinterpret_cast<const int8_t*>(op.x), op.qzeros, reinterpret_cast<int8_t*>(op.y), ctx);
}

Error prepare_QLinear(Loader& ld, uint32_t oi, const fb::QLinear& l, CpuOp* op) {
  QLinearOp* par = ld.params<QLinearOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *qp = nullptr, *w = nullptr, *ws = nullptr, *b = nullptr, *y = nullptr, *pr = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, l.x(), 2, false, true, &x));
  TERN_CHECK_OK(ld.value(oi, l.x_qparams(), 1, false, &qp));
  TERN_CHECK_OK(ld.constant_of(oi, l.weights(), 1, true, "weights", &w));
  TERN_CHECK_OK(ld.constant_of(oi, l.w_scales(), 1, false, "w_scales", &ws));
  if (l.bias() >= 0) TERN_CHECK_OK(ld.constant_of(oi, l.bias(), 1, false, "bias", &b));
  TERN_CHECK_OK(ld.value(oi, l.y(), 2, true, &y));
  TERN_CHECK_OK(ld.value(oi, l.params(), 1, true, &pr));
  ConvGeometry& g = par->qconv.g;
  g = ConvGeometry{};
  g.n = x->sizes[0], g.c = x->sizes[1], g.oc = y->sizes[1];
  g.h = g.w = g.oh = g.ow = 1, g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  // (qparams: written by a DynamicQuantize before this op runs; any values are
  // safe: the scale only scales, the zero point is clamped to int8's range
  // (run_QLinear) and multiplies weight sums of at most 2^15 * 127)
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, qp->numel == 2);
  TERN_CPU_NEED(failed, y->sizes[0] == g.n);
  TERN_CPU_NEED(failed, g.n >= 1);
  TERN_CPU_NEED(failed, g.c >= 1);
  TERN_CPU_NEED(failed, g.oc >= 1);
  TERN_CPU_NEED(failed, g.c <= (1 << 24));
  TERN_CPU_NEED(failed, g.oc <= (1 << 24));
  TERN_CPU_NEED(failed, (g.c + 3) / 4 * 4 <= (1 << 15));
  TERN_CPU_NEED(failed, uint64_t(w->numel) == qs8_packed_bytes(g));
  TERN_CPU_NEED(failed, ws->numel == g.oc);
  TERN_CPU_NEED(failed, b == nullptr || b->numel == g.oc);
  TERN_CPU_NEED(failed, pr->numel == 2 * qs8_channels(g));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): int8 linear [%lld, %lld] -> %lld: its weights (%lld "
                     "packed bytes), scales, bias, qparams or params do not fit", oi, op->nodes, (long long)g.n,
                     (long long)g.c, (long long)g.oc, (long long)w->numel);
  }
  const size_t nch = size_t(qs8_channels(g));
  int32_t* sums = static_cast<int32_t*>(ld.allocate(sizeof(int32_t) * nch));
  float* scales = static_cast<float*>(ld.allocate(sizeof(float) * nch));
  float* offset = static_cast<float*>(ld.allocate(sizeof(float) * nch));
  if (sums == nullptr || scales == nullptr || offset == nullptr) return Error::OutOfMemory;
  const int8_t* packed = reinterpret_cast<const int8_t*>(w->data);
  if (!ld.reshaping) qs8_weight_sums(g, packed, sums);  // reshaping: the block holds load's sums
  for (size_t j = 0; j < nch; ++j) {
    const bool real = int64_t(j) < g.oc;
    scales[j] = real ? ws->data[j] : 0.0f;
    offset[j] = real && b != nullptr ? b->data[j] : 0.0f;
    TERN_CPU_CHECK(ld, std::isfinite(scales[j]), "op %u: w_scales %zu is not finite", oi, j);
    TERN_CPU_CHECK(ld, std::isfinite(offset[j]), "op %u: bias %zu is not finite", oi, j);
  }
  par->qconv.packed = packed, par->qconv.offset = offset;
  par->wsums = sums, par->w_scales = scales;
  par->qparams = qp->data, par->rescale = pr->data;
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  const size_t s = qs8_conv_scratch_bytes(g, ld.qs8);  // the row pointers of a tile
  ld.need_scratch(s);
  return Error::Ok;
}

void run_QLinear(const CpuOp& cpu_op, const CpuProgram& prog, RunContext& ctx) {
  const QLinearOp& op = params_of<QLinearOp>(cpu_op);
  const Qs8Kernels& k = *prog.qs8;
  const float x_scale = op.qparams[0];
  // a DynamicQuantize's zero point is an integer in int8's range; clamped all
  // the same (a NaN too), so that whatever a crafted file left there converts
  const float z = op.qparams[1];
  const int32_t x_zero = static_cast<int32_t>(z > -128.0f ? (z < 127.0f ? z : 127.0f) : -128.0f);
  const int64_t n = qs8_channels(op.qconv.g);
  int32_t* init = reinterpret_cast<int32_t*>(op.rescale);
  float* scale = op.rescale + n;
  const int32_t shift = k.unsigned_a ? 128 : 0;  // as qs8_requant
  for (int64_t j = 0; j < n; ++j) {
    init[j] = -(x_zero + shift) * op.wsums[j];
    scale[j] = x_scale * op.w_scales[j];  // float32, as PyTorch's dequantized operands multiply
  }
  Qs8Conv q = op.qconv;
  q.init = init, q.scale = scale;
  run_qs8_linear_f32(q, k, reinterpret_cast<const int8_t*>(op.x), op.y, ctx);
}

}  // namespace cpu
}  // namespace tern
