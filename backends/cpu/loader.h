// The payload reader that load_cpu_program (program.cpp) and the op
// families (backends/cpu/ops/) share: the payload's values resolved once,
// and the checks every family's prepare makes with them.
//
//   Error prepare_Pool(Loader& ld, uint32_t oi, const fb::Pool& p, CpuOp* op) {
//     const ValueInfo *x = nullptr, *y = nullptr;
//     TERN_CHECK_OK(ld.value(oi, p.x(), 4, false, &x));   // in range, float32, 4-d
//     TERN_CHECK_OK(ld.value(oi, p.y(), 4, true, &y));    // ... and writable
//     TERN_CPU_CHECK(ld, x->sizes[3] == y->sizes[3], "op %u (%s): pool sizes do not fit", oi, op->nodes);
//     ld.need_scratch(pool_scratch_bytes(g));
//     ...
//   }
//
// A refusal names the op (its index and nodes) and the condition that
// failed, as the code states it: "op 3 (max_pool2d): pool sizes do not fit
// (needs x->sizes[3] == y->sizes[3])".
//
// A Loader lives for one load_cpu_program call; what it allocates comes from
// its PrepareContext (persistent, the method's life). Internal to the cpu
// backend: nothing outside backends/cpu/ includes this (it includes the
// generated schema code).
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "backends/cpu/program.h"
#include "backends/cpu/schema/cpu_generated.h"
#include "runtime/core/overflow.h"

namespace tern {
namespace cpu {

namespace fb = ::tern::backends::cpu::fb;

constexpr int kMaxRank = 8;

// The product of sizes read from the payload, or -1 when it overflows or
// passes 2^40 elements (more than any value may hold, read_shape): compared
// with a value's element count, -1 never matches.
int64_t elements(std::initializer_list<int64_t> sizes);

// Outputs of a window of k taps (dilation d) at stride s over in with p0
// padding before and p1 after, or -1.
int64_t window_out(int64_t in, int32_t k, int32_t s, int32_t p0, int32_t p1, int32_t d);

// An int8 quantization parameter pair: a positive finite scale and a zero
// point in int8's range.
bool qparams_ok(float scale, int32_t zero_point);
// An int8 output range: qmin <= qmax, both in int8's range.
inline bool qrange_ok(int32_t qmin, int32_t qmax) { return qmin >= -128 && qmax <= 127 && qmin <= qmax; }

struct ValueInfo {
  float* data;   // int8 and bool values: their bytes, through this pointer's type
  bool int8;     // cpu.fbs DType Int8
  bool boolean;  // cpu.fbs DType Bool (one byte an element)
  bool uint8;    // cpu.fbs DType UInt8 (bytes); none of the three: Float32
  int rank;
  int64_t sizes[kMaxRank];
  int64_t numel;
  bool writable;
  bool constant;  // in the payload's weights: bytes the file holds, the same at load and at every run
  bool dynamic;      // version 5: a size is an expression (dyn_sizes), `sizes` those at this call's inputs
  int64_t capacity;  // the elements its storage holds: its sizes' upper bounds' product
  // A 3x3 kernel that Winograd Convs read (cpu.fbs Conv.winograd_element):
  // its 16 packed elements (pack_winograd_weights), computed at load by the
  // first Conv that reads it as a c -> oc kernel, with that c; nullptr before.
  const float* winograd;
  int64_t winograd_c;
};

// What reshape_cpu_program needs of the load (program.h, CpuProgram::dynamic):
// the payload, its values and the symbols' and expressions' values, and
// what the ops asked for at the upper bounds.
struct CpuDynamic {
  const fb::Program* prog;
  const uint8_t* blob;
  uint64_t blob_bytes;
  ValueInfo* values;
  int64_t* symbols;
  int64_t* exprs;
  size_t scratch;
  int64_t zero_floats;
};

// Everything load_cpu_program builds, while it builds it.
struct Loader {
  PrepareContext& ctx;
  Span<EValue* const> inputs;
  Span<EValue* const> outputs;  // the payload's outputs, then the workspace
  const Isa& isa;
  const Qs8Kernels& qs8;
  const fb::Program* prog = nullptr;
  const uint8_t* blob = nullptr;
  uint64_t blob_bytes = 0;
  ValueInfo* values = nullptr;
  size_t scratch = 0;
  int64_t zero_floats = 1;  // the zeros padding reads: the most any op needs
  // Dynamic sizes (version 5): the payload's symbols and expressions at this
  // call's input sizes, and whether prepare runs again on new sizes
  // (reshape_cpu_program): then allocate() hands back the op's blocks of
  // the load and work that depends on weights alone (dequantizing, sums) is
  // skipped, its results already in those blocks.
  int64_t* symbols = nullptr;
  int64_t* exprs = nullptr;
  bool reshaping = false;
  CpuOp* current = nullptr;  // the op being prepared (begin_op): allocate() is its, a dynamic value makes it dynamic

  // The payload's header and flatbuffer; its inputs, outputs and workspace
  // against the delegate's; every value's storage and shape.
  Error parse(Span<const uint8_t> p);
  Error check_args();
  Error resolve_values();
  // ops[oi] before its kind's prepare: nodes, label, a known kind.
  Error begin_op(uint32_t oi, CpuOp* op);
  // Version 5: the symbols and expressions checked and their arrays
  // allocated (parse), then their values at the inputs' sizes.
  Error check_dynamic();
  Error evaluate();
  uint32_t num_symbols() const { return prog->symbols() ? prog->symbols()->size() : 0; }
  uint32_t num_exprs() const { return prog->exprs() ? prog->exprs()->size() : 0; }
  // Dynamic values: their sizes again at the current expressions, each
  // within its planned capacity.
  Error resolve_dynamic_values();

  // Persistent bytes for the current op (its parameters, tables, packed
  // weights): from ctx at load, recorded on the op; the same block again
  // when reshaping (nullptr, failing the op, if it asks for more).
  void* allocate(size_t bytes);
  // Size field `slot` of op oi (cpu.fbs: an op's exprs, one per scalar long
  // field in its table's order): the expression's value if it has one,
  // else `stored`, the field's own.
  Error field(uint32_t oi, const flatbuffers::Vector<int32_t>* exprs, uint32_t slot, int64_t stored, int64_t* out);

  // Float32 value `vi` of op `oi`: in range, `rank` dims (0: any), writable
  // if `out`. Every op reads and writes float32 values through this, but
  // those that take int8 (value_of).
  Error value(uint32_t oi, int64_t vi, int rank, bool out, const ValueInfo** v) {
    return value_of(oi, vi, rank, out, false, v);
  }
  // The same, for a value of dtype int8 (`int8`) or float32.
  Error value_of(uint32_t oi, int64_t vi, int rank, bool out, bool int8, const ValueInfo** v);
  // Value vi, read-only, of dtype bool (an attention's mask) or float32.
  Error mask_value(uint32_t oi, int64_t vi, const ValueInfo** v);
  // Whether value vi (unchecked: false when out of range) is int8, for ops
  // that take either dtype.
  bool is_int8(int64_t vi) const { return vi >= 0 && uint64_t(vi) < prog->values()->size() && values[vi].int8; }
  // The same, for a value the op reads at load (weights it packs or sums,
  // quantization parameters): in the payload's weights, so that load checks
  // bytes the file holds instead of planned memory nobody has written, which
  // later writes would change.
  Error constant_of(uint32_t oi, int64_t vi, int rank, bool int8, const char* what, const ValueInfo** v);
  // Bytes an op reads only at run (BlockLinear's GGUF rows), `rank` dims:
  // an Int8 value in the payload's weights, or a UInt8 value anywhere.
  Error bytes_of(uint32_t oi, int64_t vi, int rank, const char* what, const ValueInfo** v);
  // For ops whose kernels assume their output does not overlap an input
  // (__restrict, ukernels/common/f32_pool.h): the two values' bytes apart.
  // The exporter never plans an overlap; a crafted payload can.
  Error disjoint(uint32_t oi, const ValueInfo& x, const ValueInfo& y);
  // Each of an op's named sizes (read from the payload) in [1, limit), else
  // `what` and the size: "op 3 (bmm): matmul sizes do not fit its values
  // (k = 0, each size in [1, 16777216)) (needs s.value >= 1)".
  struct NamedSize {
    const char* name;
    int64_t value;
  };
  Error sizes(uint32_t oi, const CpuOp& op, const char* what, std::initializer_list<NamedSize> sizes, int64_t limit);
  // Two ints from a [int] field, each in [lo, 1 << 16].
  Error pair(uint32_t oi, const flatbuffers::Vector<int32_t>* v, const char* what, int32_t lo, int32_t* a, int32_t* b);
  Error epilogue(uint32_t oi, fb::Activation a, float lo, float hi, Epilogue* ep);
  // An int8 op's quantization: x's and y's parameters (y_scale: y's scale,
  // or its inverse when `y_inverse`) and its output range.
  Error quantization(uint32_t oi, const CpuOp& op, float x_scale, int32_t x_zero, float y_scale, int32_t y_zero,
                     bool y_inverse, int32_t qmin, int32_t qmax);

  // Fails the load (InvalidProgram; refuse_as: `error`) with the message,
  // then "(needs <cond>)": what TERN_CPU_CHECK and TERN_CPU_NEED report.
  Error refuse(const char* cond, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  Error refuse_as(Error error, const char* cond, const char* fmt, ...) __attribute__((format(printf, 4, 5)));

  // op's parameters: a zeroed T of its family, allocated for the method's
  // life (nullptr when out of memory).
  template <typename T>
  T* params(CpuOp* op) {
    T* p = static_cast<T*>(allocate(sizeof(T)));
    if (p != nullptr) *p = T{};
    op->params = p;
    return p;
  }

  // What the ops ask for: per-thread scratch bytes, zeros for padding taps.
  void need_scratch(size_t bytes) { scratch = bytes > scratch ? bytes : scratch; }
  void need_zeros(int64_t floats) { zero_floats = floats > zero_floats ? floats : zero_floats; }

 private:
  const Tensor& workspace() const { return outputs[outputs.size() - 1]->tensor; }
  Error read_shape(uint32_t vi, const fb::Value& v, ValueInfo* out, uint64_t* nbytes);
  void mark(const ValueInfo& v) {
    if (v.dynamic && current != nullptr) current->dynamic = true;
  }
  Error resolve_value(uint32_t vi);
  Error make_label(const fb::Op& o, CpuOp* op);
  Error vrefuse(Error error, const char* cond, const char* fmt, va_list ap);
};

// Refuses the payload (InvalidProgram; _AS: `error`) unless `cond` holds,
// naming it. One condition a check: a && b is two checks, so that the
// refusal says which failed.
//   TERN_CPU_CHECK(ld, g.c >= 1, "op %u (%s): conv sizes do not fit", oi, op->nodes);
#define TERN_CPU_CHECK(ld, cond, ...)                    \
  do {                                                   \
    if (!(cond)) return (ld).refuse(#cond, __VA_ARGS__); \
  } while (0)
#define TERN_CPU_CHECK_AS(ld, error, cond, ...)                      \
  do {                                                               \
    if (!(cond)) return (ld).refuse_as((error), #cond, __VA_ARGS__); \
  } while (0)

// Conditions that share one message: `failed` becomes the first that does
// not hold; those after it are not evaluated (as in a || chain), so a later
// one may use what an earlier one checked (v != nullptr, then v->size()).
//   const char* failed = nullptr;
//   TERN_CPU_NEED(failed, xs != nullptr);
//   TERN_CPU_NEED(failed, xs->size() == 2);
//   if (failed) return ld.refuse(failed, "op %u (%s): ...", oi, op->nodes);
#define TERN_CPU_NEED(failed, cond)                        \
  do {                                                   \
    if ((failed) == nullptr && !(cond)) (failed) = #cond; \
  } while (0)

// The families' entry points, one pair per line of ops.def.
#define CPU_OP(Kind, family)                                             \
  Error prepare_##Kind(Loader& ld, uint32_t oi, const fb::Kind& t, CpuOp* op); \
  void run_##Kind(const CpuOp& op, const CpuProgram& p, RunContext& ctx);
#include "backends/cpu/ops.def"
#undef CPU_OP

// The conv family's row chains (cpu.fbs Conv.fuse_next): ops[oi] and the
// Convs after it made one op run by run_chain (ops/conv.cpp), which calls
// conv.h's run_conv_chain.
Error link_chain(Loader& ld, uint32_t oi, CpuOp* ops, uint32_t n);

}  // namespace cpu
}  // namespace tern
