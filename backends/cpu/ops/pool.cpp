// The pooling family (cpu.fbs Pool, QPool): NHWC windows over float32 and
// int8 values, max or average; payload reading, checks and run.
#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

// The parameters of a Pool or QPool.
struct PoolOp {
  const float* x;        // QPool: int8 values
  float* y;              // QPool: int8 values
  int64_t numel;         // of y
  PoolGeometry pool;
  bool int8;
  const int8_t* qzeros;  // QPool: what padding taps read (x_zero_point, c bytes)
  float qa_scale, qa_zero;           // QPool: x's parameters
  float qscale, qzero, qmin, qmax;   // QPool: y's 1 / scale, zero point; the range
};

namespace {

// Pools with at most this many taps go through the ISA's pool microkernel,
// kPoolPixels output pixels a call; wider windows (a mean over a whole large
// image) through a plain loop.
constexpr int64_t kPoolMaxTaps = 1024;
constexpr int64_t kPoolPixels = 64;

// Output pixel (b, oy, ox) of a wide window, one tap at a time.
void pool_pixel_wide(const PoolGeometry& g, const float* x, int64_t b, int64_t oy, int64_t ox, float* out) {
  const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  for (int64_t ch = 0; ch < g.c; ++ch) out[ch] = g.max ? -__builtin_inff() : 0.f;
  int64_t count = 0;
  for (int64_t iy = y0 < 0 ? 0 : y0; iy < y0 + g.kh && iy < g.h; ++iy) {
    for (int64_t ix = x0 < 0 ? 0 : x0; ix < x0 + g.kw && ix < g.w; ++ix, ++count) {
      const float* in = x + ((b * g.h + iy) * g.w + ix) * g.c;
      if (g.max) {
        // NaN wins, as in torch: v > m or v is NaN
        for (int64_t ch = 0; ch < g.c; ++ch) out[ch] = (in[ch] > out[ch] || in[ch] != in[ch]) ? in[ch] : out[ch];
      } else {
        for (int64_t ch = 0; ch < g.c; ++ch) out[ch] += in[ch];
      }
    }
  }
  if (!g.max) {
    const float scale = 1.f / float(g.count_padding ? int64_t(g.kh) * g.kw : (count ? count : 1));
    for (int64_t ch = 0; ch < g.c; ++ch) out[ch] *= scale;
  }
}

// Tap pointers (ptrs, taps a pixel, in window order) and the averages'
// divisors of output pixels [ox0, ox0 + count) of row (b, oy), over float32
// or int8 x. Padding taps: a max reads one of the window's own taps again
// (every window has one: 2 * pad <= kernel, checked at load), an average zeros.
template <typename T>
void pool_pointers(const PoolGeometry& g, const T* x, const T* zeros, int64_t b, int64_t oy, int64_t ox0,
                   int64_t count, const T** ptrs, float* divisor) {
  const int64_t taps = int64_t(g.kh) * g.kw;
  for (int64_t i = 0; i < count; ++i) {
    const T** tp = ptrs + i * taps;
    const T* first = nullptr;
    int64_t inside = 0;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t iy = oy * g.sh - g.ph + ki, ix = (ox0 + i) * g.sw - g.pw + kj;
        const bool in = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
        tp[ki * g.kw + kj] = in ? x + ((b * g.h + iy) * g.w + ix) * g.c : nullptr;
        if (in && inside++ == 0) first = tp[ki * g.kw + kj];
      }
    }
    for (int64_t k = 0; k < taps; ++k) {
      if (tp[k] == nullptr) tp[k] = g.max ? first : zeros;
    }
    divisor[i] = float(g.count_padding ? taps : (inside ? inside : 1));
  }
}

// Every output row of a pool over threads, `step` output pixels at a time:
// call(tap pointers, divisors, count, out) with pool_pointers' results for
// pixels [ox0, ox0 + count) of the row (scratch: step * taps pointers, then
// step floats).
template <typename T, typename Call>
void pool_rows(const PoolGeometry& g, const T* x, const T* zeros, T* y, int64_t step, RunContext& ctx, Call call) {
  const int64_t taps = int64_t(g.kh) * g.kw;
  ctx.parallel_for(g.n * g.oh, grain_for(kMinElementsPerThread, {g.ow, g.c, taps}),
                   [&](RunContext& t, int64_t r0, int64_t r1) {
    const T** ptrs = static_cast<const T**>(t.scratch());
    float* divisor = reinterpret_cast<float*>(ptrs + step * taps);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t ox0 = 0; ox0 < g.ow; ox0 += step) {
        const int64_t count = g.ow - ox0 < step ? g.ow - ox0 : step;
        pool_pointers(g, x, zeros, r / g.oh, r % g.oh, ox0, count, ptrs, divisor);
        call(ptrs, divisor, count, y + (r * g.ow + ox0) * g.c);
      }
    }
  });
}

// int8: one call of the pool microkernel takes up to kPoolPixels pixels of
// at most kQPoolPointers taps in all (one pixel of a wider window: at most
// 65536 taps, checked at load).
constexpr int64_t kQPoolPointers = kPoolPixels * kPoolMaxTaps;

int64_t qpool_pixels(const PoolGeometry& g) {
  const int64_t taps = int64_t(g.kh) * g.kw, fit = kQPoolPointers / taps;
  return fit < 1 ? 1 : fit > kPoolPixels ? kPoolPixels : fit;
}

}  // namespace

size_t pool_scratch_bytes(const PoolGeometry& g) {
  const int64_t taps = int64_t(g.kh) * g.kw;
  return taps > kPoolMaxTaps ? 0 : size_t(kPoolPixels) * (size_t(taps) * sizeof(float*) + sizeof(float));
}

void run_pool(const PoolGeometry& g, const Isa& isa, const float* zeros, const float* x, float* y, RunContext& ctx) {
  const size_t taps = size_t(g.kh) * size_t(g.kw);
  if (int64_t(taps) > kPoolMaxTaps) {
    ctx.parallel_for(g.n * g.oh, grain_for(kMinElementsPerThread, {g.ow, g.c, int64_t(taps)}),
                     [&](RunContext&, int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t ox = 0; ox < g.ow; ++ox) pool_pixel_wide(g, x, r / g.oh, r % g.oh, ox, y + (r * g.ow + ox) * g.c);
      }
    });
    return;
  }
  pool_rows(g, x, zeros, y, kPoolPixels, ctx, [&](const float** ptrs, float* divisor, int64_t count, float* out) {
    for (int64_t i = 0; i < count; ++i) divisor[i] = 1.f / divisor[i];  // the float kernel multiplies
    isa.pool(size_t(g.c), size_t(count), taps, ptrs, g.max ? nullptr : divisor, out, size_t(g.c));
  });
}

size_t qpool_scratch_bytes(const PoolGeometry& g) {
  const int64_t taps = int64_t(g.kh) * g.kw, pixels = qpool_pixels(g);
  return size_t(pixels) * (size_t(taps) * sizeof(int8_t*) + sizeof(float));
}

void run_QPool(const CpuOp& cpu_op, const CpuProgram& prog, RunContext& ctx) {
  const PoolOp& op = params_of<PoolOp>(cpu_op);
  const Qs8Kernels& k = *prog.qs8;
  const PoolGeometry& g = op.pool;
  const Qs8PoolParams p{op.qa_scale, op.qa_zero, op.qscale, op.qzero, op.qmin, op.qmax};
  pool_rows(g, reinterpret_cast<const int8_t*>(op.x), op.qzeros, reinterpret_cast<int8_t*>(op.y), qpool_pixels(g), ctx,
            [&](const int8_t** ptrs, float* divisor, int64_t count, int8_t* out) {
    k.pool(size_t(g.c), size_t(count), size_t(g.kh) * size_t(g.kw), ptrs, g.max ? nullptr : divisor, out, size_t(g.c), p);
  });
}

namespace {

// A Pool's or QPool's window over x -> y, checked.
template <typename Table>
Error pool_window(Loader& ld, uint32_t oi, const Table& p, const ValueInfo& x, const ValueInfo& y, const CpuOp* op,
                  PoolOp* par) {
  PoolGeometry& g = par->pool;
  TERN_CHECK_OK(ld.pair(oi, p.kernel(), "kernel", 1, &g.kh, &g.kw));
  TERN_CHECK_OK(ld.pair(oi, p.stride(), "stride", 1, &g.sh, &g.sw));
  TERN_CHECK_OK(ld.pair(oi, p.padding(), "padding", 0, &g.ph, &g.pw));
  g.n = x.sizes[0], g.h = x.sizes[1], g.w = x.sizes[2], g.c = x.sizes[3];
  g.oh = y.sizes[1], g.ow = y.sizes[2];
  g.max = p.kind() == fb::PoolKind::Max;
  g.count_padding = p.count_padding();
  // an input of height or width 0 has windows with no tap inside it (the
  // portable kernels refuse it too)
  TERN_CPU_CHECK(ld, g.h >= 1, "op %u (%s): pool over an input of height %lld and width %lld (each must be at least 1)",
                 oi, op->nodes, (long long)g.h, (long long)g.w);
  TERN_CPU_CHECK(ld, g.w >= 1, "op %u (%s): pool over an input of height %lld and width %lld (each must be at least 1)",
                 oi, op->nodes, (long long)g.h, (long long)g.w);
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, int(p.kind()) >= 0);
  TERN_CPU_NEED(failed, p.kind() <= fb::PoolKind::Average);
  TERN_CPU_NEED(failed, y.sizes[0] == g.n);
  TERN_CPU_NEED(failed, y.sizes[3] == g.c);
  TERN_CPU_NEED(failed, g.oh == window_out(g.h, g.kh, g.sh, g.ph, g.ph, 1));
  TERN_CPU_NEED(failed, g.ow == window_out(g.w, g.kw, g.sw, g.pw, g.pw, 1));
  TERN_CPU_NEED(failed, 2 * g.ph <= g.kh);
  TERN_CPU_NEED(failed, 2 * g.pw <= g.kw);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): pool sizes do not fit", oi, op->nodes);
  }
  return Error::Ok;
}

}  // namespace

Error prepare_Pool(Loader& ld, uint32_t oi, const fb::Pool& p, CpuOp* op) {
  PoolOp* par = ld.params<PoolOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value(oi, p.x(), 4, false, &x));
  TERN_CHECK_OK(ld.value(oi, p.y(), 4, true, &y));
  TERN_CHECK_OK(pool_window(ld, oi, p, *x, *y, op, par));
  TERN_CHECK_OK(ld.disjoint(oi, *x, *y));
  const PoolGeometry& g = par->pool;
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  const size_t s = pool_scratch_bytes(g);
  ld.need_scratch(s);
  ld.need_zeros(g.c);
  return Error::Ok;
}

void run_Pool(const CpuOp& cpu_op, const CpuProgram& p, RunContext& ctx) {
  const PoolOp& op = params_of<PoolOp>(cpu_op);
  run_pool(op.pool, *p.isa, p.zeros, op.x, op.y, ctx);
}

Error prepare_QPool(Loader& ld, uint32_t oi, const fb::QPool& q, CpuOp* op) {
  PoolOp* par = ld.params<PoolOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value_of(oi, q.x(), 4, false, true, &x));
  TERN_CHECK_OK(ld.value_of(oi, q.y(), 4, true, true, &y));
  TERN_CHECK_OK(pool_window(ld, oi, q, *x, *y, op, par));
  TERN_CHECK_OK(ld.disjoint(oi, *x, *y));
  PoolGeometry& g = par->pool;
  // int32 sums of 65536 bytes cannot overflow, and are exact in float32
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, int64_t(g.kh) * g.kw <= 65536);
  TERN_CPU_NEED(failed, g.c >= 1);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): int8 pool of %d x %d taps over %lld channels (at most 65536 "
                     "taps, at least 1 channel)", oi, op->nodes, g.kh, g.kw, (long long)g.c);
  }
  TERN_CHECK_OK(ld.quantization(oi, *op, q.x_scale(), q.x_zero_point(), q.y_inv_scale(), q.y_zero_point(), true,
                                 q.qmin(), q.qmax()));
  // The largest floats the kernel computes (a sum of up to 65536 dequantized
  // taps, that requantized), bounded as QBinary's.
  const double sum = 65536.0 * 255.0 * double(q.x_scale());
  failed = nullptr;
  TERN_CPU_NEED(failed, sum <= kQs8MaxRequant);
  TERN_CPU_NEED(failed, sum * double(q.y_inv_scale()) <= kQs8MaxRequant);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): the scales (%g, 1/%g) can make its results pass 2^64", oi, op->nodes,
                     double(q.x_scale()), double(q.y_inv_scale()));
  }
  int8_t* zeros = static_cast<int8_t*>(ld.allocate(size_t(g.c)));
  if (zeros == nullptr) return Error::OutOfMemory;
  memset(zeros, q.x_zero_point(), size_t(g.c));
  par->int8 = true;
  par->qzeros = zeros;
  par->qa_scale = q.x_scale(), par->qa_zero = float(q.x_zero_point());
  par->qscale = q.y_inv_scale(), par->qzero = float(q.y_zero_point());
  par->qmin = float(q.qmin()), par->qmax = float(q.qmax());
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  const size_t s = qpool_scratch_bytes(g);
  ld.need_scratch(s);
  return Error::Ok;
}

}  // namespace cpu
}  // namespace tern
