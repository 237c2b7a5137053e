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
  alignas(16) unsigned char state[PrepareContext::kStateBytes];
};

struct Method::Delegate {
  const Backend* backend;
  void* handle;
  EValue** args;  // inputs, then outputs
};

}  // namespace tern
