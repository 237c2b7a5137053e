// The cpu backend's ops besides convolution: transposes at the layout
// boundaries, NHWC pooling, elementwise ops. Plain loops over contiguous
// channels, which the compiler vectorizes; each splits over the threads.
#include <cstring>

#include "backends/cpu/program.h"
#include "backends/cpu/reduce.h"

namespace tern {
namespace cpu {
namespace {

constexpr int64_t kMinElementsPerThread = 16384;

float clamp(float v, MinMax m) { return v < m.min ? m.min : (v > m.max ? m.max : v); }

// y[i] = ep(y[i]) for i < n.
void activate(const Epilogue& ep, float* y, int64_t n) {
  if (ep.activation == Activation::Clamp) {
    for (int64_t i = 0; i < n; ++i) y[i] = clamp(y[i], ep.clamp);
  } else if (ep.activation != Activation::None) {
    apply_activation(ep, y, size_t(n));
  }
}

// kC planes of n floats (plane stride `stride`) into n pixels of kC.
template <int kC, typename T>
void interleave(const T* x, int64_t stride, int64_t n, T* y) {
  for (int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < kC; ++c) y[i * kC + c] = x[c * stride + i];
  }
}

// y = x permuted (Transpose4), for float32 and int8 elements.
template <typename T>
void transpose(const Transpose4& t, const T* x, T* y, RunContext& ctx) {
  const int64_t outer = t.sizes[0] * t.sizes[1], inner = t.sizes[2] * t.sizes[3];
  ctx.parallel_for(outer, grain_for(kMinElementsPerThread, {inner}), [&](RunContext&, int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t i0 = o / t.sizes[1], i1 = o % t.sizes[1];
      const T* src = x + i0 * t.strides[0] + i1 * t.strides[1];
      T* dst = y + o * inner;
      if (t.strides[2] == 1 && t.sizes[3] <= 4) {  // an NCHW image into NHWC
        switch (t.sizes[3]) {
          case 1: interleave<1, T>(src, t.strides[3], t.sizes[2], dst); continue;
          case 2: interleave<2, T>(src, t.strides[3], t.sizes[2], dst); continue;
          case 3: interleave<3, T>(src, t.strides[3], t.sizes[2], dst); continue;
          default: interleave<4, T>(src, t.strides[3], t.sizes[2], dst); continue;
        }
      }
      for (int64_t i2 = 0; i2 < t.sizes[2]; ++i2) {
        const T* s2 = src + i2 * t.strides[2];
        for (int64_t i3 = 0; i3 < t.sizes[3]; ++i3) *dst++ = s2[i3 * t.strides[3]];
      }
    }
  });
}

}  // namespace

void run_transpose(const Transpose4& t, const float* x, float* y, RunContext& ctx) { transpose(t, x, y, ctx); }

void run_transpose_int8(const Transpose4& t, const int8_t* x, int8_t* y, RunContext& ctx) { transpose(t, x, y, ctx); }

void run_quantize(const CpuOp& op, const Qs8Kernels& k, RunContext& ctx) {
  const Qs8QuantizeParams p{op.qscale, op.qzero, op.qmin, op.qmax};
  int8_t* y = reinterpret_cast<int8_t*>(op.y);
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t b, int64_t e) {
    k.quantize(size_t(e - b), op.x + b, y + b, p);
  });
}

void run_qbinary(const CpuOp& op, const Qs8Kernels& k, RunContext& ctx) {
  const Qs8BinaryParams p{op.qa_scale, op.qa_zero, op.qb_scale, op.qb_zero, op.qscale, op.qzero, op.qmin, op.qmax,
                          op.binary == 2};  // BinaryKind Mul, else Add
  const int8_t* a = reinterpret_cast<const int8_t*>(op.x);
  const int8_t* b = reinterpret_cast<const int8_t*>(op.x2);
  int8_t* y = reinterpret_cast<int8_t*>(op.y);
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t i0, int64_t i1) {
    k.binary(size_t(i1 - i0), a + i0, b + i0, y + i0, p);
  });
}

void run_dynamic_quantize(const CpuOp& op, const Qs8Kernels& k, RunContext& ctx) {
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

void run_qlinear(const CpuOp& op, const Qs8Kernels& k, RunContext& ctx) {
  const float x_scale = op.qparams[0];
  // a DynamicQuantize's zero point is an integer in int8's range; clamped all
  // the same (a NaN too), so that whatever a crafted file left there converts
  const float z = op.qparams[1];
  const int32_t x_zero = static_cast<int32_t>(z > -128.0f ? (z < 127.0f ? z : 127.0f) : -128.0f);
  const int64_t n = qs8_channels(op.qconv.g);
  int32_t* init = reinterpret_cast<int32_t*>(op.params);
  float* scale = op.params + n;
  const int32_t shift = k.unsigned_a ? 128 : 0;  // as qs8_requant
  for (int64_t j = 0; j < n; ++j) {
    init[j] = -(x_zero + shift) * op.wsums[j];
    scale[j] = x_scale * op.w_scales[j];  // float32, as PyTorch's dequantized operands multiply
  }
  Qs8Conv q = op.qconv;
  q.init = init, q.scale = scale;
  run_qs8_linear_f32(q, k, reinterpret_cast<const int8_t*>(op.x), op.y, ctx);
}

void run_dequantize(const CpuOp& op, RunContext& ctx) {
  const int8_t* x = reinterpret_cast<const int8_t*>(op.x);
  float* y = op.y;
  ctx.parallel_for(op.numel, kMinElementsPerThread, [&](RunContext&, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = (static_cast<float>(x[i]) - op.qzero) * op.qscale;
  });
}

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

void run_qpool(const CpuOp& op, const Qs8Kernels& k, RunContext& ctx) {
  const PoolGeometry& g = op.pool;
  const Qs8PoolParams p{op.qa_scale, op.qa_zero, op.qscale, op.qzero, op.qmin, op.qmax};
  pool_rows(g, reinterpret_cast<const int8_t*>(op.x), op.qzeros, reinterpret_cast<int8_t*>(op.y), qpool_pixels(g), ctx,
            [&](const int8_t** ptrs, float* divisor, int64_t count, int8_t* out) {
    k.pool(size_t(g.c), size_t(count), size_t(g.kh) * size_t(g.kw), ptrs, g.max ? nullptr : divisor, out, size_t(g.c), p);
  });
}

namespace {

template <typename Op>
void binary_range(const CpuOp& o, int64_t i0, int64_t i1, Op f) {
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

void run_binary(const CpuOp& o, RunContext& ctx) {
  ctx.parallel_for(o.numel, kMinElementsPerThread, [&](RunContext&, int64_t i0, int64_t i1) {
    switch (o.binary) {
      case 0: binary_range(o, i0, i1, [](float a, float b) { return a + b; }); break;
      case 1: binary_range(o, i0, i1, [](float a, float b) { return a - b; }); break;
      default: binary_range(o, i0, i1, [](float a, float b) { return a * b; }); break;
    }
    activate(o.ep, o.y + i0, i1 - i0);
  });
}

void run_unary(const CpuOp& o, RunContext& ctx) {
  ctx.parallel_for(o.numel, kMinElementsPerThread, [&](RunContext&, int64_t i0, int64_t i1) {
    if (o.scale != 1.f || o.shift != 0.f) {
      for (int64_t i = i0; i < i1; ++i) o.y[i] = o.x[i] * o.scale + o.shift;
    } else if (o.x != o.y) {
      memmove(o.y + i0, o.x + i0, size_t(i1 - i0) * sizeof(float));
    }
    activate(o.ep, o.y + i0, i1 - i0);
  });
}

void run_layer_norm(const CpuOp& o, RunContext& ctx) {
  const int64_t rows = o.numel / o.inner, d = o.inner;
  ctx.parallel_for(rows, grain_for(kMinElementsPerThread, {d}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = o.x + r * d;
      float* y = o.y + r * d;
      const float mean = row_sum(x, d, [](float v) { return v; }) / float(d);
      const float var = row_sum(x, d, [mean](float v) { return (v - mean) * (v - mean); });
      const float rstd = 1.f / __builtin_sqrtf(var / float(d) + o.eps);
      for (int64_t i = 0; i < d; ++i) {
        const float v = (x[i] - mean) * rstd;
        y[i] = (o.weights ? v * o.weights[i] : v) + (o.bias ? o.bias[i] : 0.f);
      }
    }
  });
}

void run_softmax(const CpuOp& o, const Isa& isa, RunContext& ctx) {
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

void run_matmul(const CpuOp& o, const Isa& isa, RunContext& ctx) {
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

void run_concat(const CpuOp& o, RunContext& ctx) {
  const ConcatParts& c = o.concat;
  ctx.parallel_for(c.outer, grain_for(kMinElementsPerThread, {c.row}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < c.count; ++i) {
        // an empty input may have no storage at all (data null): nothing to copy, no pointer to offset
        if (c.inners[i] == 0) continue;
        memmove(o.y + r * c.row + c.offsets[i], c.xs[i] + r * c.inners[i], size_t(c.inners[i]) * sizeof(float));
      }
    }
  });
}

void run_interleave(const CpuOp& o, RunContext& ctx) {
  const InterleaveParts& p = o.interleave;
  const size_t bytes = size_t(p.c) * sizeof(float);
  ctx.parallel_for(p.n * p.oh, grain_for(kMinElementsPerThread, {p.ow, p.c}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / p.oh, oy = r % p.oh, py = oy % p.sh, t = oy / p.sh;
      const int64_t hp = (p.oh - py + p.sh - 1) / p.sh;
      float* out = o.y + r * p.ow * p.c;
      for (int64_t px = 0; px < p.sw; ++px) {
        const int64_t wp = (p.ow - px + p.sw - 1) / p.sw;
        const float* in = p.xs[py * p.sw + px] + ((b * hp + t) * wp) * p.c;
        for (int64_t u = 0; u < wp; ++u) memmove(out + (u * p.sw + px) * p.c, in + u * p.c, bytes);
      }
    }
  });
}

void run_slice(const CpuOp& o, RunContext& ctx) {
  const int64_t inner = o.numel / o.outer;
  if (inner == 0) return;  // x may be empty and without storage (data null)
  ctx.parallel_for(o.outer, grain_for(kMinElementsPerThread, {inner}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) memmove(o.y + r * inner, o.x + r * o.row + o.offset, size_t(inner) * sizeof(float));
  });
}

}  // namespace cpu
}  // namespace tern
