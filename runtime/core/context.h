// The contexts the executor gives whatever it calls at load and at run: the
// kernels (runtime/kernel/kernel.h, whose header describes the contract) and
// the backends (runtime/backend/backend.h).
//
//   PrepareContext  at Method::load: persistent memory for the method's life,
//                   per-thread scratch requests, inline state, the thread
//                   count, and fail() to say why the arguments are refused.
//   RunContext      at every execute(): the state, this thread's scratch, and
//                   the method's threads (parallel, parallel_for).
//
// Both live on the executor's stack for one call; neither allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"

namespace tern {

class MemoryAllocator;
class RunContext;
class ThreadPool;

// A kernel's run function (runtime/kernel/kernel.h).
using RunFn = Error (*)(RunContext& ctx, EValue* const* args);

// Given to prepare (and to a backend's init). Lives on the stack of
// Method::load for one instruction.
class PrepareContext {
 public:
  // allocator: where allocate() takes persistent memory (the method
  // allocator); may be nullptr, then allocate() fails. threads: how many
  // threads the method runs with (RunContext::thread_count()).
  PrepareContext(const char* op_name, uint32_t instruction, MemoryAllocator* allocator = nullptr,
                 int threads = 1)
      : op_name_(op_name), instruction_(instruction), allocator_(allocator), threads_(threads) {}

  // The function execute() will call for this instruction. Required.
  void set_run(RunFn fn) { run_ = fn; }

  // Scratch bytes that run() needs on each thread; RunContext::scratch() of
  // every thread index has at least this many, 64-byte aligned. Valid during
  // one run() only. The method reserves the largest request (times threads).
  void request_scratch(size_t bytes) { scratch_ = bytes > scratch_ ? bytes : scratch_; }

  // Opaque per-instruction state that prepare computes for run (e.g. a chosen
  // tile size, or a pointer to memory from allocate()), copied into the
  // binding. At most kStateBytes.
  static constexpr size_t kStateBytes = 64;
  void* state() { return state_; }
  const void* state_bytes() const { return state_; }

  // `bytes` of persistent memory, 64-byte aligned, kept until the Method is
  // destroyed: packed weights, lookup tables, requantization multipliers.
  // Taken from the method allocator at once (never during execute()). On
  // failure, records the reason and returns nullptr; prepare then returns
  // Error::OutOfMemory. Allocate after the checks: a prepare that fails
  // later does not give the bytes back.
  void* allocate(size_t bytes);

  // Threads the method runs with (>= 1), for sizing per-thread work.
  int thread_count() const { return threads_; }

  const char* op_name() const { return op_name_; }
  uint32_t instruction() const { return instruction_; }
  RunFn run() const { return run_; }
  size_t scratch() const { return scratch_; }
  size_t persistent_bytes() const { return persistent_; }

  // Records why prepare failed and returns `e`. For prepare's checks:
  //   if (x.dim != 2) return ctx.fail(Error::InvalidProgram, "self must be 2-d, got %d-d", x.dim);
  // The executor logs the reason once, with instruction, op and node, if no
  // other kernel library takes the instruction.
  Error fail(Error e, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  // The last reason given to fail(), or "".
  const char* message() const { return message_; }

  // Common checks, each recording what was expected and what was found.
  Error expect_arg_count(Span<EValue* const> args, size_t n);
  Error expect_tag(Span<EValue* const> args, size_t i, Tag tag);
  Error expect_tensor(Span<EValue* const> args, size_t i);  // Tag::Tensor

 private:
  const char* op_name_;
  uint32_t instruction_;
  MemoryAllocator* allocator_;
  int threads_;
  RunFn run_ = nullptr;
  size_t scratch_ = 0;
  size_t persistent_ = 0;
  alignas(16) unsigned char state_[kStateBytes] = {};
  char message_[320] = {};
};

// Given to run. Cheap to copy; the executor builds one per instruction.
//
// Threads: run() is called once, on the thread that called execute(), as
// thread 0 of thread_count(). It splits its own work with parallel() or
// parallel_for(), whose body runs once per thread index with that index's
// context (its own scratch). The split depends only on thread_count(), never
// on scheduling, so a kernel whose per-item work does not depend on the split
// gives the same bits for any thread count. With one thread, both call the
// body inline.
class RunContext {
 public:
  // scratch: thread_count blocks of scratch_stride bytes, one per thread
  // index. pool: runs the threads' bodies; nullptr runs them inline.
  RunContext(const void* state, void* scratch, size_t scratch_bytes, int thread_count = 1,
             size_t scratch_stride = 0, ThreadPool* pool = nullptr)
      : state_(state), scratch_(scratch), scratch_bytes_(scratch_bytes),
        scratch_stride_(scratch_stride), pool_(pool), thread_count_(thread_count < 1 ? 1 : thread_count) {}

  // What prepare wrote to PrepareContext::state().
  const void* state() const { return state_; }
  // This thread index's scratch: at least as many bytes as prepare
  // requested, 64-byte aligned.
  void* scratch() const {
    return static_cast<unsigned char*>(scratch_) + static_cast<size_t>(scratch_index_) * scratch_stride_;
  }
  size_t scratch_bytes() const { return scratch_bytes_; }

  int thread_index() const { return thread_index_; }
  int thread_count() const { return thread_count_; }

  // Calls body(ctx_t) for t = 0 .. thread_count() - 1, with ctx_t's
  // thread_index() == t, and returns when all have returned. Inside the
  // body, thread_count() is still the method's count and nested calls run
  // inline.
  template <typename F>
  void parallel(const F& body) {
    parallel_impl([](RunContext& c, void* f) { (*static_cast<const F*>(f))(c); },
                  const_cast<void*>(static_cast<const void*>(&body)), thread_count_);
  }

  // Splits [0, n) into contiguous ranges of at least `grain` items (the last
  // may be shorter), at most one per thread, and calls body(ctx_t, begin, end)
  // for each (range t on thread index t). Nothing is called when n <= 0.
  template <typename F>
  void parallel_for(int64_t n, int64_t grain, const F& body) {
    if (n <= 0) return;
    const int64_t chunks = split_count(n, grain);
    if (chunks <= 1) {
      body(*this, int64_t(0), n);
      return;
    }
    const int64_t per = (n + chunks - 1) / chunks;
    auto range = [&](RunContext& c) {
      const int64_t begin = per * c.thread_index_;
      const int64_t end = begin + per < n ? begin + per : n;
      if (begin < end) body(c, begin, end);
    };
    parallel_impl([](RunContext& c, void* f) { (*static_cast<decltype(range)*>(f))(c); }, &range,
                  static_cast<int>(chunks));
  }

  // How many ranges parallel_for(n, grain, ...) makes.
  int64_t split_count(int64_t n, int64_t grain) const {
    if (grain < 1) grain = 1;
    const int64_t by_grain = (n + grain - 1) / grain;
    return by_grain < thread_count_ ? by_grain : thread_count_;
  }

 private:
  using BodyFn = void (*)(RunContext& ctx, void* body);
  // Runs body(ctx_t) for t < tasks (tasks <= thread_count_).
  void parallel_impl(BodyFn fn, void* body, int tasks);

  const void* state_;
  void* scratch_;
  size_t scratch_bytes_;
  size_t scratch_stride_;
  ThreadPool* pool_;
  int thread_count_;
  int thread_index_ = 0;
  int scratch_index_ = 0;  // whose scratch: thread_index_, or the parent's when nested
  bool nested_ = false;    // inside a parallel body: further regions run inline
};

}  // namespace tern
