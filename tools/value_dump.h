// tern-run --dump-values DIR: every value one run computes, written as it is
// computed, for a debugger that compares them with eager PyTorch (tern debug,
// python/tern/debug.py). Run it on the device, copy DIR to the host, and
// compare there.
//
//   tern::ValueDump dump(method, "values");   // DIR must exist and be empty of a dump
//   dump.attach();                            // the method's event hook and step sink
//   module.run(...);
//   dump.detach();
//   if (!dump.finish()) fprintf(stderr, "%s\n", dump.error().c_str());
//
// DIR/values.tsv lists them in the order they were computed, one a line
// after a header line, tab-separated:
//   seq  instruction  kind  op  nodes  layout  dtype  shape  file
// kind: "kernel" (a kernel call's out) or "step" (a step inside a backend
// call: one fused op of the cpu backend; moves copy values dumped already); op:
// the ATen op or the backend's name; nodes: the torch.export nodes, '+'
// between those a step covers (the last is the node the value is of);
// layout: "nhwc" for a 4-d value a backend holds as [n, h, w, c] of the
// node's [n, c, h, w], else "plain"; shape: sizes joined by 'x' ("" for 0-d);
// file: the .npy file of the value in DIR.
//
// Test builds (TERN_RUN_TEST_BREAK: the tern-run-broken tool of make build)
// break a kernel on purpose: the environment variable TERN_RUN_BREAK names a
// node kind ("mul", "convolution": a node name without its "_N" suffix) and
// every float value of a kernel or step whose (first) node is of that kind is
// changed in place right after it was computed, so that what runs after it
// reads the broken value, as with a broken kernel.
#pragma once

#include <cstdio>
#include <string>

#include "runtime/executor/method.h"

namespace tern {

class ValueDump {
 public:
  ValueDump(Method& method, const char* dir);
  ~ValueDump();
  ValueDump(const ValueDump&) = delete;
  ValueDump& operator=(const ValueDump&) = delete;

  void attach();
  void detach();
  // Closes the index; false (with error()) if a value or the index could not be written.
  bool finish();
  const std::string& error() const { return error_; }
  size_t num_values() const { return seq_; }

 private:
  static void on_instruction(void* user, size_t instruction, bool begin);
  static void on_step(void* user, const char* name, bool begin);
  static void on_step_value(void* user, const char* name, const Tensor& t, bool channels_last);
  void write(const char* kind, const char* op, const char* nodes, const Tensor& t, bool channels_last);

  Method& method_;
  std::string dir_;
  FILE* index_ = nullptr;
  size_t seq_ = 0;
  size_t instruction_ = 0;  // the one running
  StepSink sink_{};
  std::string error_;
  const char* break_ = nullptr;  // TERN_RUN_BREAK (test builds)
};

}  // namespace tern
