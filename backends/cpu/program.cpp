// load_cpu_program: the payload read and checked (loader.cpp), each op
// prepared by its kind's entry in the prepare table, row chains linked;
// run_cpu_program: each op's run, in order. Both tables come from ops.def.
#include "backends/cpu/program.h"

#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

namespace {

// ops.def is cpu.fbs's OpKind union, line for line: each kind has the
// union's value, and the union has no kind the list lacks.
#define CPU_OP(Kind, family)                                                           \
  static_assert(uint8_t(CpuOpKind::Kind) == uint8_t(fb::OpKind::Kind), "ops.def: " #Kind \
                " is not where cpu.fbs's OpKind union has it");
#include "backends/cpu/ops.def"
#undef CPU_OP
static_assert(kCpuOpKinds == size_t(fb::OpKind::MAX) + 1, "ops.def lacks a kind of cpu.fbs's OpKind union");

using PrepareFn = Error (*)(Loader& ld, uint32_t oi, const fb::Op& o, CpuOp* op);

// The prepare table: ops.def's kinds, at their union value, each handed its
// table (the verifier checked it has the kind's type).
constexpr PrepareFn kPrepare[kCpuOpKinds] = {
    nullptr,  // None
#define CPU_OP(Kind, family) \
  [](Loader& ld, uint32_t oi, const fb::Op& o, CpuOp* op) { return prepare_##Kind(ld, oi, *o.kind_as_##Kind(), op); },
#include "backends/cpu/ops.def"
#undef CPU_OP
};

// The run table: each kind's run, at its union value.
constexpr CpuRunFn kRun[kCpuOpKinds] = {
    nullptr,  // None
#define CPU_OP(Kind, family) run_##Kind,
#include "backends/cpu/ops.def"
#undef CPU_OP
};

// Links the row chains (Conv fuse_next) whose head is dynamic, or all of
// them (at load). A Conv a chain already covers (run nullptr) never heads
// another.
Error link_chains(Loader& ld, CpuOp* ops, uint32_t n, bool dynamic_only) {
  for (uint32_t i = 0; i < n; ++i) {
    CpuOp& op = ops[i];
    if (op.kind != CpuOpKind::Conv || op.run == nullptr || !params_of<ConvOp>(op).fuse_next) continue;
    if (dynamic_only && !op.dynamic) continue;
    ld.current = &op;  // the chain's blocks are its head's
    TERN_CHECK_OK(link_chain(ld, i, ops, n));
    // a chain is prepared again as a whole: its head links it again after
    const int count = params_of<ConvOp>(op).chain;
    bool dynamic = false;
    for (int k = 0; k < count; ++k) dynamic = dynamic || ops[i + k].dynamic;
    for (int k = 0; k < count; ++k) ops[i + k].dynamic = dynamic;
  }
  return Error::Ok;
}

Error prepare_op(Loader& ld, uint32_t oi, CpuOp* op) {
  TERN_CHECK_OK(ld.begin_op(oi, op));
  const size_t k = size_t(op->kind);
  op->run = kRun[k];  // a chain's head changes it (link_chain)
  return kPrepare[k](ld, oi, *ld.prog->ops()->Get(oi), op);
}

}  // namespace

Result<CpuProgram*> load_cpu_program(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                                     Span<EValue* const> outputs, const Isa& isa, const Qs8Kernels& qs8) {
  Loader ld{ctx, inputs, outputs, isa, qs8};
  TERN_CHECK_OK(ld.parse(payload));
  TERN_CHECK_OK(ld.check_args());
  TERN_CHECK_OK(ld.check_dynamic());
  TERN_CHECK_OK(ld.evaluate());
  TERN_CHECK_OK(ld.resolve_values());
  CpuProgram* p = static_cast<CpuProgram*>(ctx.allocate(sizeof(CpuProgram)));
  const uint32_t n = ld.prog->ops()->size();
  CpuOp* ops = static_cast<CpuOp*>(ctx.allocate(sizeof(CpuOp) * (n ? n : 1)));
  if (p == nullptr || ops == nullptr) return Error::OutOfMemory;
  for (uint32_t i = 0; i < n; ++i) TERN_CHECK_OK(prepare_op(ld, i, &ops[i]));
  TERN_CHECK_OK(link_chains(ld, ops, n, false));
  ld.current = nullptr;
  CpuDynamic* dynamic = nullptr;
  if (ld.num_exprs() > 0) {
    dynamic = static_cast<CpuDynamic*>(ctx.allocate(sizeof(CpuDynamic)));
    if (dynamic == nullptr) return Error::OutOfMemory;
    *dynamic = CpuDynamic{ld.prog, ld.blob, ld.blob_bytes, ld.values, ld.symbols, ld.exprs, ld.scratch, ld.zero_floats};
  }
  float* zeros = static_cast<float*>(ctx.allocate(sizeof(float) * size_t(ld.zero_floats)));
  if (zeros == nullptr) return Error::OutOfMemory;
  memset(zeros, 0, sizeof(float) * size_t(ld.zero_floats));
  ctx.request_scratch(ld.scratch);
  *p = CpuProgram{&isa, &qs8, ops, n, zeros, {}, dynamic};  // kernels: the backend names them
  return p;
}

Error reshape_cpu_program(PrepareContext& ctx, CpuProgram& p, Span<EValue* const> inputs,
                          Span<EValue* const> outputs) {
  if (p.dynamic == nullptr) return Error::Ok;  // every size static: nothing depends on the inputs' shapes
  const CpuDynamic& d = *p.dynamic;
  Loader ld{ctx, inputs, outputs, *p.isa, *p.qs8};
  ld.prog = d.prog, ld.blob = d.blob, ld.blob_bytes = d.blob_bytes, ld.values = d.values;
  ld.symbols = d.symbols, ld.exprs = d.exprs, ld.reshaping = true;
  TERN_CHECK_OK(ld.evaluate());
  TERN_CHECK_OK(ld.resolve_dynamic_values());
  for (uint32_t i = 0; i < p.num_ops; ++i) {
    CpuOp& op = p.ops[i];
    if (!op.dynamic) continue;
    TERN_CPU_CHECK(ld, op.replayable, "op %u (%s): took more than %d blocks at load, so it cannot be prepared again",
                   i, op.nodes, kMaxOpBlocks);
    ld.current = &op;
    op.next_block = 0;
    TERN_CHECK_OK(kPrepare[size_t(op.kind)](ld, i, *d.prog->ops()->Get(i), &op));
  }
  TERN_CHECK_OK(link_chains(ld, p.ops, uint32_t(p.num_ops), true));
  // what the ops ask for at these sizes, within what load reserved at the upper bounds
  TERN_CPU_CHECK_AS(ld, Error::MemoryTooSmall, ld.zero_floats <= d.zero_floats,
                    "needs %lld zeros at these input sizes, %lld at load", (long long)ld.zero_floats,
                    (long long)d.zero_floats);
  TERN_CPU_CHECK_AS(ld, Error::MemoryTooSmall, ld.scratch <= d.scratch,
                    "needs %zu bytes of scratch at these input sizes, %zu at load", ld.scratch, d.scratch);
  return Error::Ok;
}

namespace {

// For debuggers: the value an op ran to (cpu.fbs Op.out), as a Tensor.
void report_value(const CpuOp& op, RunContext& ctx) {
  if (op.out == nullptr) return;
  const ValueInfo& v = *op.out;
  Tensor t;
  t.data = v.data;
  t.dtype = v.int8 ? ScalarType::Int8 : v.boolean ? ScalarType::Bool : v.uint8 ? ScalarType::UInt8 : ScalarType::Float32;
  t.dim = v.rank;
  for (int d = 0; d < v.rank; ++d) t.sizes[d] = v.sizes[d];
  t.numel = v.numel;
  ctx.step_value(op.nodes, t, op.out_nhwc);
}

}  // namespace

void run_cpu_program(const CpuProgram& p, RunContext& ctx) {
  for (size_t i = 0; i < p.num_ops; ++i) {
    const CpuOp& op = p.ops[i];
    if (op.run == nullptr) continue;  // ran in its chain
    ctx.begin_step(op.label);
    op.run(op, p, ctx);
    ctx.end_step(op.label);
    if (ctx.wants_values()) {  // a chain's head ran the Convs after it (run nullptr): only the last one's y is whole
      size_t last = i;
      while (last + 1 < p.num_ops && p.ops[last + 1].run == nullptr) ++last;
      report_value(p.ops[last], ctx);
    }
  }
}

}  // namespace cpu
}  // namespace tern
