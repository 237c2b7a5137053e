// The elementwise and row-wise ops (cpu.fbs Binary, Unary, LayerNorm, RmsNorm,
// Softmax, QBinary): plain loops over contiguous values, which the compiler
// vectorizes; each splits over the threads.
#include <cmath>
#include <cstring>

#include "backends/cpu/loader.h"
#include "backends/cpu/reduce.h"

namespace tern {
namespace cpu {

// The parameters of a Binary, Unary, LayerNorm, Softmax or QBinary.
struct ElementwiseOp {
  const float* x;            // Binary: a; QBinary: a's int8 values
  const float* x2;           // Binary: b; QBinary: b's int8 values
  float* y;                  // QBinary: int8 values
  int64_t numel;             // of y
  uint8_t binary;            // Binary, QBinary: BinaryKind
  int64_t b_inner, b_block;  // Binary: how b broadcasts (cpu.fbs)
  Epilogue ep;               // Binary, Unary
  float scale, shift;        // Unary: y = ep(x * scale + shift)
  const float* weights;      // LayerNorm, or nullptr
  const float* bias;         // LayerNorm, or nullptr
  int64_t inner;             // LayerNorm, Softmax: row length
  float eps;                 // LayerNorm
  float qa_scale, qa_zero, qb_scale, qb_zero;  // QBinary: a's and b's parameters
  float qscale, qzero, qmin, qmax;             // QBinary: y's 1 / scale, zero point; the range
};

namespace {

// b has exactly the elements y's broadcast reads: b_inner per block, one
// block per b_block elements of y (or one block when b_block is 0).
Error check_broadcast(Loader& ld, uint32_t oi, const ValueInfo& b, const ValueInfo& y, int64_t inner, int64_t block) {
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, inner > 0);
  TERN_CPU_NEED(failed, block >= 0);
  TERN_CPU_NEED(failed, y.numel % inner == 0);
  if (block == 0) {
    TERN_CPU_NEED(failed, b.numel == inner);
  } else {
    TERN_CPU_NEED(failed, block % inner == 0);
    TERN_CPU_NEED(failed, y.numel % block == 0);
    TERN_CPU_NEED(failed, b.numel == inner * (y.numel / block));
  }
  if (failed) {
    return ld.refuse(failed, "op %u: b (%lld elements) does not broadcast to y (%lld) with inner %lld, block %lld", oi,
                     (long long)b.numel, (long long)y.numel, (long long)inner, (long long)block);
  }
  return Error::Ok;
}

// Each operand (nullptr: none) of y's sizes.
Error same_sizes(Loader& ld, uint32_t oi, const CpuOp& op, const ValueInfo* a, const ValueInfo* b, const ValueInfo& y) {
  for (const ValueInfo* v : {a, b}) {
    if (v == nullptr) continue;
    TERN_CPU_CHECK(ld, v->numel == y.numel, "op %u (%s): operand sizes differ from the output's", oi, op.nodes);
    TERN_CPU_CHECK(ld, v->rank == y.rank, "op %u (%s): operand sizes differ from the output's", oi, op.nodes);
    TERN_CPU_CHECK(ld, memcmp(v->sizes, y.sizes, sizeof(int64_t) * y.rank) == 0,
                   "op %u (%s): operand sizes differ from the output's", oi, op.nodes);
  }
  return Error::Ok;
}

// LayerNorm and Softmax: x and y of the same element count, made of rows of
// `inner`.
Error rows(Loader& ld, uint32_t oi, int64_t xi, int64_t yi, int64_t inner, const CpuOp& op, ElementwiseOp* par) {
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value(oi, xi, 0, false, &x));
  TERN_CHECK_OK(ld.value(oi, yi, 0, true, &y));
  par->inner = inner;
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, x->numel == y->numel);
  TERN_CPU_NEED(failed, par->inner >= 1);
  TERN_CPU_NEED(failed, y->numel % par->inner == 0);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): rows of %lld do not fit %lld elements", oi, op.nodes,
                     (long long)par->inner, (long long)y->numel);
  }
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

float clamp(float v, MinMax m) { return v < m.min ? m.min : (v > m.max ? m.max : v); }

// y[i] = ep(y[i]) for i < n.
void activate(const Epilogue& ep, float* y, int64_t n) {
  if (ep.activation == Activation::Clamp) {
    for (int64_t i = 0; i < n; ++i) y[i] = clamp(y[i], ep.clamp);
  } else if (ep.activation != Activation::None) {
    apply_activation(ep, y, size_t(n));
  }
}

template <typename Op>
void binary_range(const ElementwiseOp& o, int64_t i0, int64_t i1, Op f) {
  const float* a = o.x;
  const float* b = o.x2;
  float* y = o.y;
  if (o.b_inner == 0) {
    for (int64_t i = i0; i < i1; ++i) y[i] = f(a[i], b[i]);
    return;
  }
  // broadcast b: runs of b_inner consecutive elements of y read b from the
  // start of their block's row, so the inner loop stays contiguous
  for (int64_t i = i0; i < i1;) {
    const int64_t within = i % o.b_inner, row = o.b_block ? i / o.b_block * o.b_inner : 0;
    const int64_t end = i - within + o.b_inner < i1 ? i - within + o.b_inner : i1;
    const float* br = b + row + within;  // b for element i, then onwards within this run
    for (int64_t j = 0; i < end; ++i, ++j) y[i] = f(a[i], br[j]);
  }
}

}  // namespace

Error prepare_Binary(Loader& ld, uint32_t oi, const fb::Binary& b, CpuOp* op) {
  ElementwiseOp* par = ld.params<ElementwiseOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *x2 = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value(oi, b.a(), 0, false, &x));
  TERN_CHECK_OK(ld.value(oi, b.b(), 0, false, &x2));
  TERN_CHECK_OK(ld.value(oi, b.y(), 0, true, &y));
  TERN_CPU_CHECK(ld, int(b.kind()) >= 0, "op %u: bad binary kind %d", oi, int(b.kind()));
  TERN_CPU_CHECK(ld, b.kind() <= fb::BinaryKind::Mul, "op %u: bad binary kind %d", oi, int(b.kind()));
  TERN_CHECK_OK(ld.epilogue(oi, b.activation(), b.min(), b.max(), &par->ep));
  par->binary = uint8_t(b.kind());
  TERN_CHECK_OK(ld.field(oi, b.exprs(), 0, b.b_inner(), &par->b_inner));
  TERN_CHECK_OK(ld.field(oi, b.exprs(), 1, b.b_block(), &par->b_block));
  const bool broadcast = par->b_inner != 0;
  if (broadcast) TERN_CHECK_OK(check_broadcast(ld, oi, *x2, *y, par->b_inner, par->b_block));
  TERN_CHECK_OK(same_sizes(ld, oi, *op, x, broadcast ? nullptr : x2, *y));
  par->x = x->data, par->x2 = x2->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_Binary(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const ElementwiseOp& o = params_of<ElementwiseOp>(cpu_op);
  ctx.parallel_for(o.numel, kMinElementsPerThread, [&](RunContext&, int64_t i0, int64_t i1) {
    switch (o.binary) {
      case 0: binary_range(o, i0, i1, [](float a, float b) { return a + b; }); break;
      case 1: binary_range(o, i0, i1, [](float a, float b) { return a - b; }); break;
      default: binary_range(o, i0, i1, [](float a, float b) { return a * b; }); break;
    }
    activate(o.ep, o.y + i0, i1 - i0);
  });
}

Error prepare_Unary(Loader& ld, uint32_t oi, const fb::Unary& u, CpuOp* op) {
  ElementwiseOp* par = ld.params<ElementwiseOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value(oi, u.x(), 0, false, &x));
  TERN_CHECK_OK(ld.value(oi, u.y(), 0, true, &y));
  TERN_CHECK_OK(ld.epilogue(oi, u.activation(), u.min(), u.max(), &par->ep));
  par->scale = u.scale();
  par->shift = u.shift();
  TERN_CPU_CHECK(ld, std::isfinite(par->scale), "op %u: bad scale %g", oi, double(par->scale));
  TERN_CPU_CHECK(ld, std::isfinite(par->shift), "op %u: bad shift %g", oi, double(par->shift));
  TERN_CHECK_OK(same_sizes(ld, oi, *op, x, nullptr, *y));
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_Unary(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const ElementwiseOp& o = params_of<ElementwiseOp>(cpu_op);
  ctx.parallel_for(o.numel, kMinElementsPerThread, [&](RunContext&, int64_t i0, int64_t i1) {
    if (o.scale != 1.f || o.shift != 0.f) {
      for (int64_t i = i0; i < i1; ++i) o.y[i] = o.x[i] * o.scale + o.shift;
    } else if (o.x != o.y) {
      memmove(o.y + i0, o.x + i0, size_t(i1 - i0) * sizeof(float));
    }
    activate(o.ep, o.y + i0, i1 - i0);
  });
}

namespace {

// LayerNorm's and RmsNorm's checks: rows of x and y, a weight and a bias
// (-1: none) of inner floats, a finite eps >= 0.
Error prepare_norm(Loader& ld, uint32_t oi, uint32_t x, uint32_t y, int64_t inner, int32_t weight, int32_t bias,
                   float eps, CpuOp* op) {
  ElementwiseOp* par = ld.params<ElementwiseOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  TERN_CHECK_OK(rows(ld, oi, x, y, inner, *op, par));
  const ValueInfo *w = nullptr, *b = nullptr;
  if (weight >= 0) TERN_CHECK_OK(ld.value(oi, weight, 0, false, &w));
  if (bias >= 0) TERN_CHECK_OK(ld.value(oi, bias, 0, false, &b));
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, !w || w->numel == par->inner);
  TERN_CPU_NEED(failed, !b || b->numel == par->inner);
  TERN_CPU_NEED(failed, eps >= 0.f);
  TERN_CPU_NEED(failed, std::isfinite(eps));
  if (failed) return ld.refuse(failed, "op %u: norm weight, bias or eps do not fit", oi);
  par->eps = eps;
  par->weights = w ? w->data : nullptr, par->bias = b ? b->data : nullptr;
  return Error::Ok;
}

// y = (x - mean) / sqrt(var + eps) * weight + bias over each row; without
// `centered` (RMSNorm) the mean is 0 and var the mean square.
void run_norm(const ElementwiseOp& o, bool centered, RunContext& ctx) {
  const int64_t rows = o.numel / o.inner, d = o.inner;
  ctx.parallel_for(rows, grain_for(kMinElementsPerThread, {d}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = o.x + r * d;
      float* y = o.y + r * d;
      const float mean = centered ? row_sum(x, d, [](float v) { return v; }) / float(d) : 0.f;
      const float var = row_sum(x, d, [mean](float v) { return (v - mean) * (v - mean); });
      const float rstd = 1.f / __builtin_sqrtf(var / float(d) + o.eps);
      for (int64_t i = 0; i < d; ++i) {
        const float v = (x[i] - mean) * rstd;
        const float scaled = o.weights ? v * o.weights[i] : v;
        y[i] = o.bias ? scaled + o.bias[i] : scaled;
      }
    }
  });
}

}  // namespace

Error prepare_LayerNorm(Loader& ld, uint32_t oi, const fb::LayerNorm& ln, CpuOp* op) {
  int64_t inner = 0;
  TERN_CHECK_OK(ld.field(oi, ln.exprs(), 0, ln.inner(), &inner));
  return prepare_norm(ld, oi, ln.x(), ln.y(), inner, ln.weight(), ln.bias(), ln.eps(), op);
}

void run_LayerNorm(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  run_norm(params_of<ElementwiseOp>(cpu_op), true, ctx);
}

Error prepare_RmsNorm(Loader& ld, uint32_t oi, const fb::RmsNorm& n, CpuOp* op) {
  int64_t inner = 0;
  TERN_CHECK_OK(ld.field(oi, n.exprs(), 0, n.inner(), &inner));
  return prepare_norm(ld, oi, n.x(), n.y(), inner, n.weight(), -1, n.eps(), op);
}

void run_RmsNorm(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  run_norm(params_of<ElementwiseOp>(cpu_op), false, ctx);
}

Error prepare_Softmax(Loader& ld, uint32_t oi, const fb::Softmax& s, CpuOp* op) {
  ElementwiseOp* par = ld.params<ElementwiseOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  int64_t inner = 0;
  TERN_CHECK_OK(ld.field(oi, s.exprs(), 0, s.inner(), &inner));
  return rows(ld, oi, s.x(), s.y(), inner, *op, par);
}

void run_Softmax(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const ElementwiseOp& o = params_of<ElementwiseOp>(cpu_op);
  const Isa& isa = *p.isa;
  const int64_t rows = o.numel / o.inner, d = o.inner;
  ctx.parallel_for(rows, grain_for(kMinElementsPerThread, {d}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = o.x + r * d;
      float* y = o.y + r * d;
      const float mx = row_max(x, d);
      for (int64_t i = 0; i < d; ++i) y[i] = x[i] - mx;
      isa.vact(4, y, size_t(d));  // exp
      const float inv = 1.f / row_sum(y, d, [](float v) { return v; });
      for (int64_t i = 0; i < d; ++i) y[i] *= inv;
    }
  });
}

Error prepare_QBinary(Loader& ld, uint32_t oi, const fb::QBinary& q, CpuOp* op) {
  ElementwiseOp* par = ld.params<ElementwiseOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *a = nullptr, *b = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, q.a(), 0, false, true, &a));
  TERN_CHECK_OK(ld.value_of(oi, q.b(), 0, false, true, &b));
  TERN_CHECK_OK(ld.value_of(oi, q.y(), 0, true, true, &y));
  for (const ValueInfo* v : {a, b}) {
    TERN_CPU_CHECK(ld, v->rank == y->rank, "op %u (%s): operand sizes differ from the output's", oi, op->nodes);
    TERN_CPU_CHECK(ld, memcmp(v->sizes, y->sizes, sizeof(int64_t) * size_t(y->rank)) == 0,
                   "op %u (%s): operand sizes differ from the output's", oi, op->nodes);
  }
  const float y_scale = q.y_inv_scale();  // positive and finite like a scale
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, q.kind() == fb::BinaryKind::Add || q.kind() == fb::BinaryKind::Mul);
  TERN_CPU_NEED(failed, qparams_ok(q.a_scale(), q.a_zero_point()));
  TERN_CPU_NEED(failed, qparams_ok(q.b_scale(), q.b_zero_point()));
  TERN_CPU_NEED(failed, qparams_ok(y_scale, q.y_zero_point()));
  TERN_CPU_NEED(failed, qrange_ok(q.qmin(), q.qmax()));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): bad kind or quantization (scales %g, %g, 1/%g; zero "
                     "points %d, %d, %d; range [%d, %d])", oi, op->nodes, double(q.a_scale()), double(q.b_scale()),
                     double(y_scale), q.a_zero_point(), q.b_zero_point(), q.y_zero_point(), q.qmin(), q.qmax());
  }
  // The largest floats the kernel computes (each operand dequantized, their
  // sum or product, that requantized), in double: each within 2^64, so that
  // none overflows to inf (and inf - inf to NaN) on one ISA and not another.
  const double ra = 255.0 * double(q.a_scale()), rb = 255.0 * double(q.b_scale());
  const double r = q.kind() == fb::BinaryKind::Mul ? ra * rb : ra + rb;
  failed = nullptr;
  TERN_CPU_NEED(failed, ra <= kQs8MaxRequant);
  TERN_CPU_NEED(failed, rb <= kQs8MaxRequant);
  TERN_CPU_NEED(failed, r <= kQs8MaxRequant);
  TERN_CPU_NEED(failed, r * double(y_scale) <= kQs8MaxRequant);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): the scales (%g, %g, 1/%g) can make its results pass 2^64", oi, op->nodes,
                     double(q.a_scale()), double(q.b_scale()), double(y_scale));
  }
  par->binary = uint8_t(q.kind());
  par->qa_scale = q.a_scale(), par->qa_zero = float(q.a_zero_point());
  par->qb_scale = q.b_scale(), par->qb_zero = float(q.b_zero_point());
  par->qscale = y_scale, par->qzero = float(q.y_zero_point());
  par->qmin = float(q.qmin()), par->qmax = float(q.qmax());
  par->x = a->data, par->x2 = b->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_QBinary(const CpuOp& cpu_op, const CpuProgram& prog, RunContext& ctx) {
  const ElementwiseOp& op = params_of<ElementwiseOp>(cpu_op);
  const Qs8Kernels& k = *prog.qs8;
  const Qs8BinaryParams p{op.qa_scale, op.qa_zero, op.qb_scale, op.qb_zero, op.qscale, op.qzero, op.qmin, op.qmax,
                          op.binary == 2};  // BinaryKind Mul, else Add
  const int8_t* a = reinterpret_cast<const int8_t*>(op.x);
  const int8_t* b = reinterpret_cast<const int8_t*>(op.x2);
  int8_t* y = reinterpret_cast<int8_t*>(op.y);
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t i0, int64_t i1) {
    k.binary(size_t(i1 - i0), a + i0, b + i0, y + i0, p);
  });
}

}  // namespace cpu
}  // namespace tern
