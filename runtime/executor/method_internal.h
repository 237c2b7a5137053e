// Method's bound instructions and delegates: shared by method_load.cpp (which
// builds them) and method.cpp (which runs them). Internal to runtime/executor.
#pragma once

#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/context.h"
#include "runtime/executor/method.h"

namespace tern {

struct Method::Instr {
  using Kind = InstructionKind;
  Kind kind;
  uint32_t a = 0;  // Move: from; JumpFalse: condition value; BackendCall: delegate
  uint32_t b = 0;  // Move: to;   JumpFalse: target instruction
  RunFn run = nullptr;
  EValue** args = nullptr;  // Kernel: arguments then outs
  const char* op_name = "";  // "aten::add.Tensor", or the backend's name
  const OpKernel* kernel = nullptr;  // Kernel: the one bound (prepared again when shapes change)
  alignas(16) unsigned char state[PrepareContext::kStateBytes];
};

// Dynamic shapes (format 1.3): what execute() updates when the inputs' shapes
// changed since the last call (method_shapes.cpp). Arrays in method memory.
struct Method::Shapes {
  uint32_t num_symbols = 0;
  int64_t* symbols = nullptr;        // current values
  const int64_t* symbol_min = nullptr;
  const int64_t* symbol_max = nullptr;
  uint32_t* symbol_input = nullptr;  // per symbol: the input whose dim it is read from, and the dim
  uint8_t* symbol_dim = nullptr;
  uint32_t num_exprs = 0;
  int64_t* exprs = nullptr;  // each size expression's value at `symbols`
  uint32_t num_tensors = 0;  // tensor values with dynamic sizes
  uint32_t* tensors = nullptr;
  int64_t* capacity = nullptr;      // per tensor: the elements its planned bytes hold
  int32_t* tensor_input = nullptr;  // per tensor: its input index, or -1
  uint32_t num_ints = 0;             // Int values with an expression
  uint32_t* ints = nullptr;
  uint32_t num_lists = 0;            // IntList values with expressions (items copied to method memory)
  uint32_t* lists = nullptr;
  int64_t** list_items = nullptr;
  uint32_t num_instrs = 0;           // instructions that read or write any of these, in order
  uint32_t* instrs = nullptr;
  PrepareContext::Block* blocks = nullptr;  // per instruction: kMaxBlocks blocks its prepare allocated
  uint8_t* num_blocks = nullptr;
  bool dirty = false;  // an input's shape changed since the last update
};

// Evaluates the size expressions at s.symbols and sets every dynamic tensor's
// sizes, Int and IntList item; input tensors are set too when assign_inputs,
// else checked against their expressions. Logs and fails on a size that
// does not fit its plan.
Error apply_shapes(const fb::Method& fm, Method::Shapes& s, EValue* values, bool assign_inputs);

// True if instruction `ii` reads or writes a value whose shape or value is dynamic.
bool instruction_is_dynamic(const fb::Method& fm, uint32_t ii);
// True if value `vi` (a tensor, Int, IntList or tensor list) is dynamic.
bool value_is_dynamic(const fb::Method& fm, uint32_t vi);

struct Method::Delegate {
  const Backend* backend;
  void* handle;
  EValue** args;  // inputs, then outputs
};

}  // namespace tern
