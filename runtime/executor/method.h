// Method: one method of a Program (e.g. "forward"), bound to kernels and
// memory, ready to run.
//
//   MemoryManager mm{&method_allocator, planned_arenas};
//   Result<Method> m = Method::load(program, "forward", mm, {/*threads=*/2});
//   TERN_CHECK_OK(m->set_input(0, input_data, input_bytes));
//   TERN_CHECK_OK(m->execute());
//   const Tensor& y = m->output(0);   // points into planned memory
//
// load() resolves every operator to a registered kernel once, builds the
// values (constants point into the file, activations into planned memory),
// runs each kernel's prepare, which checks dtypes and shapes, and initializes
// each delegate (format 1.1) on its registered backend
// (runtime/backend/backend.h), which checks its payload. After that,
// execute() allocates nothing and checks nothing twice: it runs the bound
// kernels and backend calls in order. Outputs stay valid until the next
// execute(). Destroying the Method destroys its delegates.
//
// State (format 1.2): a model whose forward mutates its buffers (a recurrent
// hidden state, a step counter, a KV cache) keeps them in the method, in
// planned memory that no other tensor shares, from one execute() to the next.
// load() sets them to their initial values; reset_state() does it again.
//
// Dynamic shapes (format 1.3): an input dim exported as a torch.export.Dim
// takes any size within the Dim's bounds (MethodMeta::input_dim_range). The
// method's memory is planned for the upper bounds; set_input(i, tensor) with
// new sizes makes the next execute() compute every size from the inputs'
// and prepare the affected kernels again (no allocation). output(i) then has
// the sizes of this call.
//
// Dynamic shapes are a module of their own: call tern::enable_dynamic_shapes()
// once before loading such files (tern::Module does); without it they are
// refused (NotSupported) and the module is not linked.
//
// Threads: a method runs each instruction on the thread that calls execute();
// kernels split their work over MethodOptions::threads threads of a
// persistent pool (runtime/core/thread_pool.h), started at load. With one
// thread (the default here; tern::Module defaults to the physical cores),
// nothing is synchronized.
// Thread safety: none; use one Method per thread (Programs may be shared).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/program.h"
#include "runtime/kernel/kernel.h"

namespace tern {

class ThreadPool;

struct MethodOptions {
  // Threads the kernels split their work over (1 = the calling thread only).
  int threads = 1;
  // Where the threads come from when threads > 1; nullptr: the process-wide
  // pool (ThreadPool::process_pool()). Must outlive the Method.
  ThreadPool* pool = nullptr;
  // The most instructions one execute() may run again by jumping back (the
  // iterations of torch.while_loop loops, format 1.2); beyond it execute()
  // stops with ExecutionFailed, so no file can make it run forever. Files
  // without loops never reach it. 0: no limit (only for trusted files).
  uint64_t max_loop_instructions = uint64_t(1) << 26;
};

// Links in and turns on dynamic shapes (format 1.3) for every Program and
// Method loaded afterwards. Idempotent; call before loading, not while
// another thread loads.
void enable_dynamic_shapes();

enum class InstructionKind : uint8_t { Kernel, BackendCall, Move, JumpFalse, Free };

class Method {
 public:
  static Result<Method> load(const Program& program, const char* name, MemoryManager& memory,
                             const MethodOptions& options = {});

  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }
  // The planned input tensor i: its dtype and sizes are what set_input wants.
  const Tensor& input(size_t i) const { return values_[inputs_[i]].tensor; }
  const Tensor& output(size_t i) const { return values_[outputs_[i]].tensor; }

  // Copies `nbytes` from `data` into input i. InvalidArgument (with a log line
  // naming the input and the expected size) when i or nbytes is wrong.
  Error set_input(size_t i, const void* data, size_t nbytes);
  // Same, checking dtype and sizes of `t` against input i. A dynamic dim
  // (format 1.3) takes any size within its bounds; beyond them, or on a
  // static dim that differs, InvalidArgument names the input, dim and bound.
  Error set_input(size_t i, const Tensor& t);
  // True if some dim of input i is dynamic (format 1.3).
  bool input_is_dynamic(size_t i) const;

  // The tensors the method keeps between calls (format 1.2), in the file's
  // order, each named after its buffer in the model ("cell.hidden").
  size_t num_state() const;
  const char* state_name(size_t i) const;
  const Tensor& state(size_t i) const;
  // Sets every state tensor back to its initial value (as right after load).
  void reset_state();

  // Runs the instructions. On a kernel failure, logs the instruction index,
  // operator and source node, and returns the error. A loop that runs more
  // than MethodOptions::max_loop_instructions is ExecutionFailed.
  Error execute();

  size_t num_instructions() const { return num_instructions_; }
  // Bytes this method took from its method allocator.
  size_t metadata_bytes() const { return metadata_bytes_; }
  // Bytes of scratch reserved for kernels: the largest single request, per thread.
  size_t scratch_bytes() const { return scratch_bytes_; }
  // Bytes kernels took for the method's life (PrepareContext::allocate).
  size_t persistent_bytes() const { return persistent_bytes_; }
  int threads() const { return threads_; }
  const char* name() const { return name_; }
  // "aten::convolution" for instruction i (for profiles and errors); for a
  // backend call, the backend's name ("cpu").
  const char* instruction_op(size_t i) const;
  InstructionKind instruction_kind(size_t i) const;
  // The torch.export node of instruction i, or "".
  const char* instruction_node(size_t i) const;
  // For debuggers (tern-run --dump-values): the tensors instruction i writes
  // (a kernel's outs, a move's destination; none for a backend call, whose
  // steps report theirs: StepSink::value). Writes up to `capacity` of them
  // to out and returns how many there are; they hold the values until
  // memory planned for later instructions is written.
  size_t instruction_outputs(size_t i, const Tensor** out, size_t capacity) const;

  // The delegates (format 1.1) this method initialized, in the file's
  // order: each one's backend ("cpu") and what that backend says it chose
  // at load (Backend::describe, e.g. "float=avx2 int8=avx2"); "" when i is
  // out of range.
  size_t num_delegates() const { return num_delegates_; }
  const char* delegate_backend(size_t i) const;
  const char* delegate_description(size_t i) const;
  // All that delegate i's backend says it chose (Backend::describe_details,
  // e.g. each microkernel of the cpu backend by name), written into out as
  // snprintf writes; the text's whole length ("" and 0 when i is out of range).
  size_t delegate_details(size_t i, char* out, size_t size) const;

  // Runs instruction i alone (for profilers: tern-run --profile);
  // InvalidArgument when i is out of range.
  Error execute_instruction(size_t i);

  // An event hook for profilers (tern-run --trace): called with
  // begin = true right before instruction i runs in execute() and with
  // begin = false right after it (also when it failed), on the thread that
  // called execute(). Jumps are not instructions that run. nullptr (the
  // default) turns it off; execute() then takes a loop without the hook, so
  // tracing off costs nothing. The hook must not allocate if the
  // application wants execute() allocation-free.
  // `steps`, when given, also receives the named steps backends report
  // inside a backend call (their fused ops), between that instruction's
  // begin and end.
  using EventHook = void (*)(void* user, size_t instruction, bool begin);
  void set_event_hook(EventHook hook, void* user, const StepSink* steps = nullptr) {
    hook_ = hook;
    hook_user_ = user;
    steps_ = hook ? steps : nullptr;
  }

  struct Instr;     // a bound instruction (method.cpp)
  struct Delegate;  // an initialized delegate (method.cpp)
  struct Shapes;    // dynamic shapes (method_shapes.cpp)

  Method(Method&& other) noexcept;
  Method& operator=(Method&& other) noexcept;
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;
  ~Method();

 private:
  Method() = default;
  Error set_threads(const MethodOptions& options);
  void destroy_delegates();
  void unpoison_arenas();
  template <bool kTraced>
  Error run_instructions();
  Error run_instruction(size_t i);

  const fb::Method* fb_ = nullptr;
  const char* name_ = "";
  EValue* values_ = nullptr;
  size_t num_values_ = 0;
  const uint32_t* inputs_ = nullptr;  // value indices (in the flatbuffer)
  const uint32_t* outputs_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  Instr* instrs_ = nullptr;
  size_t num_instructions_ = 0;
  void* scratch_ = nullptr;  // threads_ blocks of scratch_stride_ bytes
  size_t scratch_bytes_ = 0;
  size_t scratch_stride_ = 0;
  size_t persistent_bytes_ = 0;
  size_t metadata_bytes_ = 0;
  int threads_ = 1;
  uint64_t max_loop_instructions_ = 0;
  ThreadPool* pool_ = nullptr;
  Delegate* delegates_ = nullptr;  // the first num_delegates_ are initialized
  size_t num_delegates_ = 0;
  EventHook hook_ = nullptr;
  void* hook_user_ = nullptr;
  const StepSink* steps_ = nullptr;
  Shapes* shapes_ = nullptr;  // nullptr: every shape is static
  // AddressSanitizer builds: the arenas whose gaps load() poisoned, unpoisoned
  // by the destructor (arena_poison.h); nullptr in other builds.
  Span<uint8_t>* poisoned_ = nullptr;
  size_t num_poisoned_ = 0;
};

}  // namespace tern
