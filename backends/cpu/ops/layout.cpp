// The ops that move values without computing (cpu.fbs Transpose, Copy,
// Concat, Interleave, Slice), for float32 values (Transpose and Copy: int8
// too); each splits over the threads.
#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

struct Transpose4 {
  int64_t sizes[4];    // of x
  int64_t strides[4];  // of x, for y's axes in order: y[i0][i1][i2][i3] = x[sum i_k * strides[k]]
};

// Concat (cpu.fbs): y as [outer, row]; input i fills columns
// [offsets[i], offsets[i] + inners[i]) of every row.
struct ConcatParts {
  const float* const* xs;
  const int64_t* inners;
  const int64_t* offsets;
  int64_t count, outer, row;
};

// Interleave (cpu.fbs): y [n, oh, ow, c] from sh * sw phases.
struct InterleaveParts {
  const float* const* xs;
  int64_t n, oh, ow, c;
  int32_t sh, sw;
};

// The parameters of a Transpose, Copy, Concat, Interleave or Slice.
struct LayoutOp {
  const float* x;       // int8 values' bytes for an int8 Transpose or Copy
  float* y;
  int64_t numel;        // of y
  bool int8;            // Transpose, Copy: of int8 values
  Transpose4 transpose;
  ConcatParts concat;
  InterleaveParts interleave;
  int64_t outer, offset, row;  // Slice: y[o] = x[o * row + offset, + numel / outer)
};

namespace {

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

Error prepare_Transpose(Loader& ld, uint32_t oi, const fb::Transpose& t, CpuOp* op) {
  LayoutOp* par = ld.params<LayoutOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  const bool int8 = ld.is_int8(t.x());  // x and y of one dtype, either
  TERN_CHECK_OK(ld.value_of(oi, t.x(), 0, false, int8, &x));
  TERN_CHECK_OK(ld.value_of(oi, t.y(), 0, true, int8, &y));
  par->int8 = int8;
  const int r = x->rank;
  const auto* perm = t.perm();
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, r <= 4);
  TERN_CPU_NEED(failed, y->rank == r);
  TERN_CPU_NEED(failed, perm != nullptr);
  TERN_CPU_NEED(failed, perm->size() == uint32_t(r));
  if (failed) {
    return ld.refuse(failed, "op %u: transpose of rank %d (at most 4) needs a perm of that length", oi, r);
  }
  int64_t x_strides[4] = {};
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    x_strides[d] = stride;
    stride *= x->sizes[d];
  }
  bool seen[4] = {};
  Transpose4& tr = par->transpose;
  for (int i = 0; i < 4; ++i) tr.sizes[i] = 1, tr.strides[i] = 0;
  for (int i = 0; i < r; ++i) {
    const int32_t a = perm->Get(i);
    failed = nullptr;
    TERN_CPU_NEED(failed, a >= 0);
    TERN_CPU_NEED(failed, a < r);
    TERN_CPU_NEED(failed, !seen[a]);
    TERN_CPU_NEED(failed, y->sizes[i] == x->sizes[a]);
    if (failed) return ld.refuse(failed, "op %u: perm is not a permutation matching the sizes (perm[%d] = %d)", oi, i, a);
    seen[a] = true;
    tr.sizes[4 - r + i] = y->sizes[i];
    tr.strides[4 - r + i] = x_strides[a];
  }
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_Transpose(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const LayoutOp& op = params_of<LayoutOp>(cpu_op);
  if (op.int8) {
    transpose(op.transpose, reinterpret_cast<const int8_t*>(op.x), reinterpret_cast<int8_t*>(op.y), ctx);
  } else {
    transpose(op.transpose, op.x, op.y, ctx);
  }
}

// Bytes of either dtype, x's and y's the same.
Error prepare_Copy(Loader& ld, uint32_t oi, const fb::Copy& c, CpuOp* op) {
  LayoutOp* par = ld.params<LayoutOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  const bool int8 = ld.is_int8(c.x());
  TERN_CHECK_OK(ld.value_of(oi, c.x(), 0, false, int8, &x));
  TERN_CHECK_OK(ld.value_of(oi, c.y(), 0, true, int8, &y));
  par->int8 = int8;
  TERN_CPU_CHECK(ld, x->numel == y->numel, "op %u (%s): operand sizes differ from the output's", oi, op->nodes);
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_Copy(const CpuOp& cpu_op, const CpuProgram&, RunContext&) {
  const LayoutOp& op = params_of<LayoutOp>(cpu_op);
  // empty values may have no storage (data null), which memmove must not get even for 0 bytes
  if (op.x != op.y && op.numel > 0) memmove(op.y, op.x, size_t(op.numel) * (op.int8 ? 1 : sizeof(float)));
}

Error prepare_Concat(Loader& ld, uint32_t oi, const fb::Concat& cc, CpuOp* op) {
  LayoutOp* par = ld.params<LayoutOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo* y = nullptr;
  TERN_CHECK_OK(ld.value(oi, cc.y(), 0, true, &y));
  const auto* xs = cc.xs();
  const auto* offsets = cc.offsets();
  int64_t outer = 0;
  TERN_CHECK_OK(ld.field(oi, cc.exprs(), 0, cc.outer(), &outer));
  TERN_CPU_CHECK(ld, items_aligned(offsets), "op %u (%s): misaligned concat offsets", oi, op->nodes);
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, xs != nullptr);
  TERN_CPU_NEED(failed, offsets != nullptr);
  TERN_CPU_NEED(failed, xs->size() == offsets->size());
  TERN_CPU_NEED(failed, outer >= 1);
  TERN_CPU_NEED(failed, y->numel >= outer);
  TERN_CPU_NEED(failed, y->numel % outer == 0);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): concat needs as many offsets as inputs and outer dividing y", oi,
                     op->nodes);
  }
  ConcatParts& c = par->concat;
  c.count = xs->size(), c.outer = outer, c.row = y->numel / outer;
  const float** ptrs = static_cast<const float**>(ld.allocate(sizeof(float*) * size_t(c.count ? c.count : 1)));
  int64_t* sizes = static_cast<int64_t*>(ld.allocate(sizeof(int64_t) * 2 * size_t(c.count ? c.count : 1)));
  if (ptrs == nullptr || sizes == nullptr) return Error::OutOfMemory;
  for (int64_t i = 0; i < c.count; ++i) {
    const ValueInfo* x = nullptr;
    TERN_CHECK_OK(ld.value(oi, xs->Get(uint32_t(i)), 0, false, &x));
    const int64_t inner = x->numel / outer, at = offsets->Get(uint32_t(i));
    failed = nullptr;
    TERN_CPU_NEED(failed, x->numel % outer == 0);
    TERN_CPU_NEED(failed, at >= 0);
    TERN_CPU_NEED(failed, inner <= c.row - at);
    if (failed) {
      return ld.refuse(failed, "op %u (%s): concat input %lld (%lld elements at column %lld) does not fit rows of %lld",
                       oi, op->nodes, (long long)i, (long long)x->numel, (long long)at, (long long)c.row);
    }
    ptrs[i] = x->data, sizes[i] = inner, sizes[c.count + i] = at;
  }
  c.xs = ptrs, c.inners = sizes, c.offsets = sizes + c.count;
  par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_Concat(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const LayoutOp& o = params_of<LayoutOp>(cpu_op);
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

Error prepare_Interleave(Loader& ld, uint32_t oi, const fb::Interleave& il, CpuOp* op) {
  LayoutOp* par = ld.params<LayoutOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo* y = nullptr;
  TERN_CHECK_OK(ld.value(oi, il.y(), 4, true, &y));
  InterleaveParts& p = par->interleave;
  TERN_CHECK_OK(ld.pair(oi, il.stride(), "stride", 1, &p.sh, &p.sw));
  p.n = y->sizes[0], p.oh = y->sizes[1], p.ow = y->sizes[2], p.c = y->sizes[3];
  const auto* xs = il.xs();
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, xs != nullptr);
  TERN_CPU_NEED(failed, uint64_t(xs->size()) == uint64_t(p.sh) * uint64_t(p.sw));
  TERN_CPU_NEED(failed, p.oh >= p.sh);
  TERN_CPU_NEED(failed, p.ow >= p.sw);
  TERN_CPU_NEED(failed, p.c >= 1);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): interleave needs stride[0] * stride[1] inputs and an output "
                     "at least as large as its stride", oi, op->nodes);
  }
  const float** ptrs = static_cast<const float**>(ld.allocate(sizeof(float*) * xs->size()));
  if (ptrs == nullptr) return Error::OutOfMemory;
  for (uint32_t i = 0; i < xs->size(); ++i) {
    const ValueInfo* x = nullptr;
    TERN_CHECK_OK(ld.value(oi, xs->Get(i), 4, false, &x));
    const int64_t py = i / p.sw, px = i % p.sw;
    const int64_t want[4] = {p.n, (p.oh - py + p.sh - 1) / p.sh, (p.ow - px + p.sw - 1) / p.sw, p.c};
    TERN_CPU_CHECK(ld, memcmp(x->sizes, want, sizeof(want)) == 0,
                   "op %u (%s): interleave input %u is not [%lld, %lld, %lld, %lld]", oi, op->nodes, i,
                   (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
    ptrs[i] = x->data;
  }
  p.xs = ptrs;
  par->y = y->data, par->numel = y->numel;
  return Error::Ok;
}

void run_Interleave(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const LayoutOp& o = params_of<LayoutOp>(cpu_op);
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

Error prepare_Slice(Loader& ld, uint32_t oi, const fb::Slice& sl, CpuOp* op) {
  LayoutOp* par = ld.params<LayoutOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *x = nullptr, *y = nullptr;
  TERN_CHECK_OK(ld.value(oi, sl.x(), 0, false, &x));
  TERN_CHECK_OK(ld.value(oi, sl.y(), 0, true, &y));
  int64_t outer = 0, offset = 0;
  TERN_CHECK_OK(ld.field(oi, sl.exprs(), 0, sl.outer(), &outer));
  TERN_CHECK_OK(ld.field(oi, sl.exprs(), 1, sl.offset(), &offset));
  const char* failed = nullptr;
  TERN_CPU_NEED(failed, outer >= 1);
  TERN_CPU_NEED(failed, x->numel % outer == 0);
  TERN_CPU_NEED(failed, y->numel % outer == 0);
  TERN_CPU_NEED(failed, offset >= 0);
  TERN_CPU_NEED(failed, y->numel / outer <= x->numel / outer - offset);
  TERN_CPU_NEED(failed, x->data != y->data);
  if (failed) {
    return ld.refuse(failed, "op %u (%s): slice of %lld rows at %lld does not fit x (%lld elements) and "
                     "y (%lld)", oi, op->nodes, (long long)outer, (long long)offset, (long long)x->numel,
                     (long long)y->numel);
  }
  par->x = x->data, par->y = y->data, par->numel = y->numel;
  par->outer = outer, par->offset = offset, par->row = x->numel / outer;
  return Error::Ok;
}

void run_Slice(const CpuOp& cpu_op, const CpuProgram&, RunContext& ctx) {
  const LayoutOp& o = params_of<LayoutOp>(cpu_op);
  const int64_t inner = o.numel / o.outer;
  if (inner == 0) return;  // x may be empty and without storage (data null)
  ctx.parallel_for(o.outer, grain_for(kMinElementsPerThread, {inner}), [&](RunContext&, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) memmove(o.y + r * inner, o.x + r * o.row + o.offset, size_t(inner) * sizeof(float));
  });
}

}  // namespace cpu
}  // namespace tern
