// A cpu backend delegate, ready to run: the payload (backends/cpu/schema/
// cpu.fbs) checked and resolved once, at Method::load, into a list of ops
// whose tensors are plain pointers into the delegate's arguments, its
// workspace and the payload's weights. Each op is its kind (ops.def), its
// run function and its family's parameters (backends/cpu/ops/<family>.cpp,
// which holds the kind's payload reading, checks and run).
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

struct PoolGeometry {
  int64_t n, h, w, c, oh, ow;
  int32_t kh, kw, sh, sw, ph, pw;
  bool max;            // else average
  bool count_padding;  // average: divide by the full window
};

// Attention (cpu.fbs): q and y in AttentionOp, the rest here.
struct AttentionGeometry {
  int64_t batch, heads, kv_heads, l, s, e, ev;
  const float* k;
  const float* v;
  const float* mask;          // or nullptr: added to the scores
  const uint8_t* mask_bool;   // or nullptr: 0 drops the key (-inf), any other byte keeps it
  int64_t mask_strides[4];    // over [batch, heads, l, s]; 0 where the mask broadcasts
  float* packed;              // k and v packed at run time (workspace)
  float scale;
  bool causal;
  bool kv_seq_major;          // k, v as [batch, s, kv_heads, e] (a KV cache's layout), not [batch, kv_heads, s, e]
  int64_t kv_rows;            // else k, v as [batch, kv_heads, kv_rows, e], the first s rows read (kv_rows >= s)
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
struct ValueInfo;  // loader.h
// Runs one op, blind: everything it reads was checked by its prepare.
using CpuRunFn = void (*)(const CpuOp& op, const CpuProgram& p, RunContext& ctx);

// The persistent blocks an op's prepare took at load (Loader::allocate), which
// it gets back when prepared again at new sizes.
constexpr int kMaxOpBlocks = 6;
struct OpBlock {
  void* data;
  size_t bytes;
};

struct CpuOp {
  CpuOpKind kind;
  CpuRunFn run;        // its kind's run (program.cpp's run table), run_chain for a chain's head;
                       // nullptr: a Conv its chain's head runs
  const char* nodes;   // the torch.export nodes it covers ("convolution_3+relu_2"), or ""
  const char* label;   // what profiles call it: the nodes, else the op kind
  const ValueInfo* out;  // for debuggers (cpu.fbs Op.out): the value holding the last of `nodes`, or nullptr
  bool out_nhwc;         // a 4-d `out` holds its node's [n, c, h, w] as [n, h, w, c]
  void* params;        // its family's parameter struct (backends/cpu/ops/), allocated at load
  bool dynamic;        // reads, writes or is sized by a dynamic size: prepared again when they change
  bool replayable;     // its blocks fit `blocks` (else it cannot be prepared again)
  uint8_t num_blocks;  // recorded at load; handed out again when reshaping
  uint8_t next_block;
  OpBlock blocks[kMaxOpBlocks];
};

// op's parameters, as its family's run reads them.
template <typename T>
const T& params_of(const CpuOp& op) {
  return *static_cast<const T*>(op.params);
}

struct CpuDynamic;  // loader.h

struct CpuProgram {
  const Isa* isa;
  const Qs8Kernels* qs8;  // the int8 microkernels
  CpuOp* ops;
  size_t num_ops;
  const float* zeros;  // padding taps read these (as many as the widest input)
  char kernels[48];    // the kernel sets, as Backend::describe says them: "float=avx2 int8=avx2"
  CpuDynamic* dynamic;  // payload version 5 with dynamic sizes, else nullptr
};

// Checks and resolves `payload` against the delegate's inputs and outputs
// (the payload's outputs, then the workspace). Allocates the program from ctx
// (persistent) and requests its scratch. Fails with ctx.fail() naming the op
// or value.
Result<CpuProgram*> load_cpu_program(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                                     Span<EValue* const> outputs, const Isa& isa, const Qs8Kernels& qs8);

// Dynamic sizes (payload version 5): the delegate's tensors have new sizes;
// prepares again each op they reach, allocation-free, checking everything
// as load did. On failure the program must not run until a reshape succeeds
// (the executor runs none: its update failed).
Error reshape_cpu_program(PrepareContext& ctx, CpuProgram& p, Span<EValue* const> inputs,
                          Span<EValue* const> outputs);

// Runs every op in order over ctx's threads.
void run_cpu_program(const CpuProgram& p, RunContext& ctx);

// The fewest elements worth a thread, for the ops that split plain loops.
constexpr int64_t kMinElementsPerThread = 16384;

// Pool (ops/pool.cpp): zeros: at least c floats (an average's padding taps);
// per-thread scratch: pool_scratch_bytes; QPool's: qpool_scratch_bytes.
void run_pool(const PoolGeometry& g, const Isa& isa, const float* zeros, const float* x, float* y, RunContext& ctx);
size_t pool_scratch_bytes(const PoolGeometry& g);
size_t qpool_scratch_bytes(const PoolGeometry& g);

// Attention's parameters (ops/attention.cpp): attention over q (x) into y.
struct AttentionOp {
  AttentionGeometry attention;
  const float* x;  // q
  float* y;
  int64_t numel;   // of y
};
void run_attention(const AttentionOp& op, const Isa& isa, RunContext& ctx);
// Floats of Attention's `packed` workspace, and the per-thread scratch it needs.
int64_t attention_packed_floats(const AttentionGeometry& a);
size_t attention_scratch_bytes(const AttentionGeometry& a, const Isa& isa);

}  // namespace cpu
}  // namespace tern
