// The kernel interface: how the executor calls an operator.
//
// A kernel is two functions, split by trust boundary:
//
//   prepare  runs once, at Method::load. It receives the instruction's
//            arguments (shapes and dtypes are static in format v1), checks
//            everything the file could get wrong (argument count and tags,
//            dtypes, shapes, out sizes, parameter ranges), may ask for scratch
//            memory, and picks the run function (e.g. per dtype). Every
//            failure returns an Error with a log line naming the problem.
//   run      runs at every execute(), on arguments that prepare accepted. It
//            allocates nothing, re-checks nothing, and fails only on what
//            depends on the data itself (e.g. an embedding index out of range).
//
// Arguments arrive in the order of the ATen schema (defaults filled in by the
// exporter), followed by the out tensor(s): for
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// args = [self, other, alpha, out]. Out tensors have their final sizes and
// planned memory already; kernels write them, never resize them. An op that
// returns Tensor[] (e.g. aten::split_with_sizes) gets one TensorList out whose
// items are planned tensors. A Python number where the schema says Tensor
// (x + 2) arrives as an Int/Double/Bool value or a 0-d constant tensor; either
// takes part in type promotion as a "wrapped number" (lower priority than
// tensors with dimensions), as in ATen.
//
// Example (kernels/portable/op_relu.cpp):
//
//   static tern::Error relu_run(tern::RunContext&, tern::EValue* const* args) {
//     const tern::Tensor& x = args[0]->tensor;  tern::Tensor& y = args[1]->tensor;
//     ...; return tern::Error::Ok;
//   }
//   tern::Error relu_prepare(tern::PrepareContext& ctx, tern::Span<tern::EValue* const> args) {
//     TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
//     ... checks ...
//     ctx.set_run(relu_run);
//     return tern::Error::Ok;
//   }
#pragma once

#include <cstddef>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"

namespace tern {

class RunContext;

using RunFn = Error (*)(RunContext& ctx, EValue* const* args);

// Given to prepare. Carries the instruction's identity for error messages.
class PrepareContext {
 public:
  PrepareContext(const char* op_name, uint32_t instruction)
      : op_name_(op_name), instruction_(instruction) {}

  // The function execute() will call for this instruction. Required.
  void set_run(RunFn fn) { run_ = fn; }
  // Scratch bytes (64-byte aligned) that run() needs; given as
  // RunContext::scratch(). The method reserves the largest request at load.
  void request_scratch(size_t bytes) { scratch_ = bytes > scratch_ ? bytes : scratch_; }
  // Opaque per-instruction state that prepare computes for run (e.g. a chosen
  // tile size), stored inline in the binding. At most kStateBytes.
  static constexpr size_t kStateBytes = 64;
  void* state() { return state_; }

  const char* op_name() const { return op_name_; }
  uint32_t instruction() const { return instruction_; }
  RunFn run() const { return run_; }
  size_t scratch() const { return scratch_; }

  // Logs "instruction I (op): <message>" and returns `e`. For prepare's checks:
  //   if (x.dim != 2) return ctx.fail(Error::InvalidProgram, "self must be 2-d, got %d-d", x.dim);
  Error fail(Error e, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

  // Common checks, each logging what was expected and what was found.
  Error expect_arg_count(Span<EValue* const> args, size_t n);
  Error expect_tag(Span<EValue* const> args, size_t i, Tag tag);
  Error expect_tensor(Span<EValue* const> args, size_t i);  // Tag::Tensor

 private:
  const char* op_name_;
  uint32_t instruction_;
  RunFn run_ = nullptr;
  size_t scratch_ = 0;
  alignas(16) unsigned char state_[kStateBytes] = {};
};

// Given to run.
class RunContext {
 public:
  RunContext(void* scratch, size_t scratch_bytes, void* state)
      : scratch_(scratch), scratch_bytes_(scratch_bytes), state_(state) {}
  // At least as many bytes as prepare requested, 64-byte aligned.
  void* scratch() const { return scratch_; }
  size_t scratch_bytes() const { return scratch_bytes_; }
  // What prepare wrote to PrepareContext::state().
  const void* state() const { return state_; }

 private:
  void* scratch_;
  size_t scratch_bytes_;
  void* state_;
};

using PrepareFn = Error (*)(PrepareContext& ctx, Span<EValue* const> args);

// One registered operator: "aten::add.Tensor" -> prepare.
struct OpKernel {
  const char* name;  // "<namespace>::<name>.<overload>", or without ".<overload>" for the default overload
  uint32_t num_outputs;  // the last num_outputs arguments are out tensors
  PrepareFn prepare;
};

}  // namespace tern
