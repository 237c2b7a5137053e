// A cpu backend delegate, ready to run: the payload (backends/cpu/schema/
// cpu.fbs) checked and resolved once, at Method::load, into a list of ops
// whose tensors are plain pointers into the delegate's arguments, its
// workspace and the payload's weights.
//
//   Result<CpuProgram*> p = load_cpu_program(ctx, payload, inputs, outputs, *isa);  // checks everything
//   run_cpu_program(*p, run_ctx);                                        // blind, no allocation
//
// Everything a file can get wrong (sizes, indices, offsets, shapes, storage
// ranges) is checked by load_cpu_program; run_cpu_program trusts it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/conv.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/qconv.h"
#include "runtime/core/context.h"
#include "runtime/core/result.h"

namespace tern {
namespace cpu {

struct Transpose4 {
  int64_t sizes[4];    // of x
  int64_t strides[4];  // of x, for y's axes in order: y[i0][i1][i2][i3] = x[sum i_k * strides[k]]
};

struct PoolGeometry {
  int64_t n, h, w, c, oh, ow;
  int32_t kh, kw, sh, sw, ph, pw;
  bool max;            // else average
  bool count_padding;  // average: divide by the full window
};

// Attention (cpu.fbs): q in CpuOp::x, y in CpuOp::y, the rest here.
struct AttentionGeometry {
  int64_t batch, heads, kv_heads, l, s, e, ev;
  const float* k;
  const float* v;
  const float* mask;          // or nullptr
  int64_t mask_strides[4];    // over [batch, heads, l, s]; 0 where the mask broadcasts
  float* packed;              // k and v packed at run time (workspace)
  float scale;
  bool causal;
};

// The op kinds, cpu.fbs's OpKind union's values (ops.def); 0 is none.
enum class CpuOpKind : uint8_t {
  None,
#define CPU_OP(Kind, family) Kind,
#include "backends/cpu/ops.def"
#undef CPU_OP
};
constexpr size_t kCpuOpKinds = 0
#define CPU_OP(Kind, family) +1
#include "backends/cpu/ops.def"
#undef CPU_OP
                               + 1;  // with None

struct CpuOp;
struct CpuProgram;
// Runs one op, blind: everything it reads was checked by its prepare.
using CpuRunFn = void (*)(const CpuOp& op, const CpuProgram& p, RunContext& ctx);

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

struct CpuOp {
  CpuOpKind kind;
  CpuRunFn run;       // its kind's run (the run table, program.cpp), run_conv_chain's for a chain's head;
                      // nullptr: a Conv its chain's head runs
  const char* nodes;  // the torch.export nodes it covers ("convolution_3+relu_2"), or ""
  const char* label;  // what profiles call it: the nodes, else the op kind
  const float* x;     // Binary: a
  const float* x2;    // Conv: residual (or nullptr); Binary: b
  const float* weights;
  float* y;
  int64_t numel;      // of y
  int64_t outer, offset, row;  // Slice: y[o] = x[o * row + offset, + numel / outer)
  uint8_t binary;     // BinaryKind
  int64_t b_inner, b_block;  // Binary: how b broadcasts (cpu.fbs)
  float scale, shift;        // Unary: y = ep(x * scale + shift)
  const float* bias;         // LayerNorm (weight in `weights`), or nullptr
  int64_t inner;             // LayerNorm, Softmax: row length
  float eps;                 // LayerNorm
  int64_t batch, m, k, n;    // MatMul
  float* packed;             // MatMul: b packed at run time (workspace)
  Epilogue ep;
  bool fuse_next;            // Conv: cpu.fbs Conv.fuse_next
  int chain;                 // a chain's head (link_chain): Convs it runs (2 or 3) ...
  const ConvStage* stages;   // ... and their stages (y: the last one's output)
  ConvGeometry conv;
  Transpose4 transpose;
  PoolGeometry pool;
  AttentionGeometry attention;
  ConcatParts concat;
  InterleaveParts interleave;
  // int8 (cpu.fbs version 3): x and y point at int8 values for QConv, QBinary
  // and QPool (both), Quantize (y), Dequantize (x), an int8 Transpose (both).
  bool int8;                 // Transpose: of int8 values
  Qs8Conv qconv;             // QConv
  const int8_t* qzeros;      // QConv, QPool: what padding taps read (x_zero_point; QConv: c rounded up to 4 bytes, QPool: c)
  float qscale;              // Quantize: float(1 / scale); Dequantize: scale; QBinary, QPool: y's 1 / scale
  float qzero, qmin, qmax;   // Quantize, Dequantize, QBinary, QPool (y's): the zero point; the range
  float qa_scale, qa_zero, qb_scale, qb_zero;  // QBinary: a's and b's parameters (x, x2); QPool: x's (qa_)
  float* qparams;            // DynamicQuantize (written), QLinear (read): scale, zero point
  float qeps;                // DynamicQuantize
  const int32_t* wsums;      // QLinear: the weight sum of each output channel
  const float* w_scales;     // QLinear: per output channel
  float* params;             // QLinear: init (as int32) and scale, each qs8_channels, filled at each call
};

struct CpuProgram {
  const Isa* isa;
  const Qs8Kernels* qs8;  // the int8 microkernels
  CpuOp* ops;
  size_t num_ops;
  const float* zeros;  // padding taps read these (as many as the widest input)
  char kernels[48];    // the kernel sets, as Backend::describe says them: "float=avx2 int8=avx2"
};

// Checks and resolves `payload` against the delegate's inputs and outputs
// (the payload's outputs, then the workspace). Allocates the program from ctx
// (persistent) and requests its scratch. Fails with ctx.fail() naming the op
// or value.
Result<CpuProgram*> load_cpu_program(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                                     Span<EValue* const> outputs, const Isa& isa, const Qs8Kernels& qs8);

// Runs every op in order over ctx's threads.
void run_cpu_program(const CpuProgram& p, RunContext& ctx);

// The run table (program.cpp): each kind's run, at its union value.
extern const CpuRunFn kCpuRun[kCpuOpKinds];

// The fewest elements worth a thread, for the ops that split plain loops.
constexpr int64_t kMinElementsPerThread = 16384;

// Pool (ops/pool.cpp): zeros: at least c floats (an average's padding taps);
// per-thread scratch: pool_scratch_bytes; QPool's: qpool_scratch_bytes.
void run_pool(const PoolGeometry& g, const Isa& isa, const float* zeros, const float* x, float* y, RunContext& ctx);
size_t pool_scratch_bytes(const PoolGeometry& g);
size_t qpool_scratch_bytes(const PoolGeometry& g);

// Attention (ops/attention.cpp): op.attention over q (op.x) into op.y.
void run_attention(const CpuOp& op, const Isa& isa, RunContext& ctx);
// Floats of Attention's `packed` workspace, and the per-thread scratch it needs.
int64_t attention_packed_floats(const AttentionGeometry& a);
size_t attention_scratch_bytes(const AttentionGeometry& a, const Isa& isa);

}  // namespace cpu
}  // namespace tern
