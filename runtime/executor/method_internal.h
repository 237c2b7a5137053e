// Method's bound instructions and delegates: shared by method_load.cpp (which
// builds them) and method.cpp (which runs them). Internal to runtime/executor.
#pragma once

#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/context.h"
#include "runtime/core/memory_allocator.h"
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

  // Method's private steps (method_shapes.cpp): set_input's check of new
  // sizes, and execute()'s update to the inputs' shapes.
  static Error resize_input(Method& m, size_t i, const Tensor& t);
  static Error update(Method& m);
  static Error reshape_delegate(Method& m, uint32_t ii, uint32_t di);
};

// The dynamic-shapes module (method_shapes.cpp), reached only through this
// table, which tern::enable_dynamic_shapes() sets: a runtime that never
// calls it does not link the module (the core's size, DESIGN.md).
struct DynamicShapes {
  // Method::load: the Shapes of a verified method with dynamic shapes, every
  // symbol at its upper bound and every size set there.
  Error (*init)(const fb::Method& fm, MemoryAllocator& allocator, EValue* values, Method::Shapes** out);
  // True if value `vi` (a tensor, Int, IntList or tensor list) is dynamic.
  bool (*value_is_dynamic)(const fb::Method& fm, uint32_t vi);
  Error (*resize_input)(Method& m, size_t i, const Tensor& t);
  Error (*update)(Method& m);
};
extern const DynamicShapes* dynamic_shapes;  // nullptr until enabled

struct Method::Delegate {
  const Backend* backend;
  void* handle;
  EValue** args;  // inputs, then outputs
};

}  // namespace tern
