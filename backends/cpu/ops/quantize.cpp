// The conversions between float32 and int8 (cpu.fbs Quantize, Dequantize,
// DynamicQuantize), as the portable kernels compute them
// (kernels/portable/op_quantize.cpp).
#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

// The parameters of a Quantize, Dequantize or DynamicQuantize.
struct QuantizeOp {
  const float* x;  // Dequantize: int8 values
  float* y;        // Quantize, DynamicQuantize: int8 values
  int64_t numel;
  float qscale;    // Quantize: float(1 / scale); Dequantize: scale
  float qzero, qmin, qmax;
  float* qparams;  // DynamicQuantize: scale, zero point (written at each run)
  float qeps;      // DynamicQuantize
};

namespace {

// A Quantize's or Dequantize's scale (Quantize: its inverse) and zero point,
// and x and y of one element count.
Error quantize_params(Loader& ld, uint32_t oi, float scale, int32_t zero_point, const ValueInfo& x, const ValueInfo& y,
                      const CpuOp& op, QuantizeOp* par) {
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, qparams_ok(scale, zero_point));
  TERN_CPU_NEED(failed, x.numel == y.numel);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): scale %g, zero point %d, %lld -> %lld elements", oi,
                     op.nodes, double(scale), zero_point, (long long)x.numel, (long long)y.numel);
  }
  par->qscale = scale;  // Quantize: the inverse already
  par->qzero = float(zero_point);
  par->x = x.data, par->y = y.data, par->numel = y.numel;
  return Error::Ok;
}

}  // namespace

// float32 x -> int8 y
Error prepare_Quantize(Loader& ld, uint32_t oi, const fb::Quantize& q, CpuOp* op) {
  QuantizeOp* par = ld.params<QuantizeOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, q.x(), 0, false, false, &x));
  TERN_CHECK_OK(ld.value_of(oi, q.y(), 0, true, true, &y));
  TERN_CPU_CHECK(ld, qrange_ok(q.qmin(), q.qmax()), "op %u: quant range [%d, %d] is not within int8's", oi, q.qmin(),
                 q.qmax());
  par->qmin = float(q.qmin()), par->qmax = float(q.qmax());
  return quantize_params(ld, oi, q.inv_scale(), q.zero_point(), *x, *y, *op, par);
}

// int8 x -> float32 y
Error prepare_Dequantize(Loader& ld, uint32_t oi, const fb::Dequantize& d, CpuOp* op) {
  QuantizeOp* par = ld.params<QuantizeOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, d.x(), 0, false, true, &x));
  TERN_CHECK_OK(ld.value_of(oi, d.y(), 0, true, false, &y));
  return quantize_params(ld, oi, d.scale(), d.zero_point(), *x, *y, *op, par);
}

void run_Quantize(const CpuOp& cpu_op, const CpuProgram& prog, RunContext& ctx) {
  const QuantizeOp& op = params_of<QuantizeOp>(cpu_op);
  const Qs8Kernels& k = *prog.qs8;
  const Qs8QuantizeParams p{op.qscale, op.qzero, op.qmin, op.qmax};
  int8_t* y = reinterpret_cast<int8_t*>(op.y);
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t b, int64_t e) {
    k.quantize(size_t(e - b), op.x + b, y + b, p);
  });
}

void run_Dequantize(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const QuantizeOp& op = params_of<QuantizeOp>(cpu_op);
  const int8_t* x = reinterpret_cast<const int8_t*>(op.x);
  float* y = op.y;
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = (static_cast<float>(x[i]) - op.qzero) * op.qscale;
  });
}

Error prepare_DynamicQuantize(Loader& ld, uint32_t oi, const fb::DynamicQuantize& d, CpuOp* op) {
  QuantizeOp* par = ld.params<QuantizeOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr, *qp = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, d.x(), 0, false, false, &x));
  TERN_CHECK_OK(ld.value_of(oi, d.y(), 0, true, true, &y));
  TERN_CHECK_OK(ld.value_of(oi, d.qparams(), 1, true, false, &qp));
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, x->numel == y->numel);
  TERN_CPU_NEED(failed, x->numel >= 1);
  TERN_CPU_NEED(failed, qp->numel == 2);
  TERN_CPU_NEED(failed, qrange_ok(d.qmin(), d.qmax()));
  TERN_CPU_NEED(failed, d.qmin() < d.qmax());  // the scale divides by qmax - qmin (eager: quant_min < quant_max)
  TERN_CPU_NEED(failed, d.eps() > 0.0f);
  TERN_CPU_NEED(failed, std::isfinite(d.eps()));
  if (failed) {
    return ld.refuse(failed, "op %u (%s): x and y of %lld and %lld elements (at least 1), qparams of "
                     "2, range [%d, %d] within int8 with qmin < qmax, eps %g > 0 do not hold", oi, op->nodes,
                     (long long)x->numel, (long long)y->numel, d.qmin(), d.qmax(), double(d.eps()));
  }
  par->qmin = float(d.qmin()), par->qmax = float(d.qmax()), par->qeps = d.eps();
  par->qparams = qp->data;
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_DynamicQuantize(const CpuOp& cpu_op, const CpuProgram& prog, RunContext& ctx) {
  const QuantizeOp& op = params_of<QuantizeOp>(cpu_op);
  const Qs8Kernels& k = *prog.qs8;
  // choose_qparams.tensor, as the portable kernel computes it (op_quantize.cpp)
  const float* x = op.x;
  float lo, hi;
  k.minmax(size_t(op.numel), x, &lo, &hi);  // NaNs are skipped
  const float min_neg = lo < 0.0f ? lo : 0.0f, max_pos = hi > 0.0f ? hi : 0.0f;
  float scale = (max_pos - min_neg) / static_cast<float>(static_cast<double>(op.qmax - op.qmin));
  scale = scale > op.qeps ? scale : op.qeps;
  const float shift = __builtin_nearbyintf(min_neg / scale);
  float zero = op.qmin - (shift == shift ? shift : 0.0f);
  zero = zero < op.qmin ? op.qmin : zero > op.qmax ? op.qmax : zero;
  op.qparams[0] = scale, op.qparams[1] = zero;
  // quantize_per_tensor.tensor: x * float(1 / double(scale))
  const Qs8QuantizeParams p{static_cast<float>(1.0 / static_cast<double>(scale)), zero, op.qmin, op.qmax};
  int8_t* y = reinterpret_cast<int8_t*>(op.y);
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t b, int64_t e) {
    k.quantize(size_t(e - b), x + b, y + b, p);
  });
}

}  // namespace cpu
}  // namespace tern
