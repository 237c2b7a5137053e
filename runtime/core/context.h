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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/span.h"

namespace tern {

// A grain for RunContext::parallel_for: the fewest items one thread takes so
// that it does at least `min_work`, for items whose work is the product of
// `factors` (sizes, taps, channels). Sizes from a file can make that product
// overflow or be 0 (an empty tensor): it saturates, and counts at least 1.
//
//   ctx.parallel_for(rows, grain_for(1 << 16, {ow, c, taps}), body);
inline int64_t grain_for(int64_t min_work, std::initializer_list<int64_t> factors) {
  int64_t work = 1;
  for (int64_t f : factors) {
    if (f > 1 && __builtin_mul_overflow(work, f, &work)) return 1;
  }
  return min_work / work + 1;
}

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

  // Preparing again (dynamic shapes, format 1.3: when the inputs' shapes
  // change, the executor runs prepare again on the new shapes): allocate()
  // then hands out the blocks the first prepare got, in the same order, each
  // as long as it is large enough, so a kernel may allocate in prepare as it
  // likes but never more than at the shapes' upper bounds.
  struct Block {
    void* data;
    size_t bytes;
  };
  static constexpr int kMaxBlocks = 4;
  void replay(const Block* blocks, int count) {
    replay_ = blocks;
    num_blocks_ = count;
  }
  // The blocks allocate() handed out (the first kMaxBlocks), and how many.
  const Block* blocks() const { return blocks_; }
  int num_blocks() const { return num_blocks_; }

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
  Block blocks_[kMaxBlocks] = {};
  const Block* replay_ = nullptr;
  int num_blocks_ = 0;  // allocate() calls so far (recording), or blocks to replay
  int replayed_ = 0;
  alignas(16) unsigned char state_[kStateBytes] = {};
  char message_[320] = {};
};

// Receives the named steps a backend reports inside one backend call (its
// fused ops), when a profiler asked for them (Method::set_event_hook).
// `value`, when set (debuggers: tern-run --dump-values), also receives each
// step's result right after the step: `t` views the backend's memory (valid
// until the backend's next step), `name` is the torch.export nodes the step
// covers (the last of them is the node t holds), and `channels_last` says
// that a 4-d t holds the node's [n, c, h, w] as [n, h, w, c].
struct StepSink {
  void (*fn)(void* user, const char* name, bool begin);
  void* user;
  void (*value)(void* user, const char* name, const Tensor& t, bool channels_last) = nullptr;
};

// Given to run. Cheap to copy; the executor builds one per instruction.
//
// Threads: run() is called once, on the thread that called execute(), as
// thread 0 of thread_count(). It splits its own work with parallel() (the
// body once per thread index) or parallel_for() (ranges handed out to the
// threads as they come free), each call with its thread's context (its own
// scratch). A kernel whose result for an item does not depend on how the
// items were split gives the same bits for any thread count. With one
// thread, both call the body inline.
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

  // Steps of a backend call, for profiles: no-ops (one branch) unless a
  // profiler is listening. Call from the thread that called run, around
  // each named step; `name` must outlive the method (e.g. from the payload).
  void begin_step(const char* name) const {
    if (steps_ != nullptr) steps_->fn(steps_->user, name, true);
  }
  void end_step(const char* name) const {
    if (steps_ != nullptr) steps_->fn(steps_->user, name, false);
  }
  // A step's result, for debuggers (StepSink::value): a no-op unless one
  // listens; wants_values() says whether one does (skip building t if not).
  bool wants_values() const { return steps_ != nullptr && steps_->value != nullptr; }
  void step_value(const char* name, const Tensor& t, bool channels_last) const {
    if (wants_values()) steps_->value(steps_->user, name, t, channels_last);
  }
  void set_steps(const StepSink* steps) { steps_ = steps; }
  // This context with another state: for a kernel whose run calls another
  // kernel's run (kernels/portable/util/half_stage.h).
  RunContext with_state(const void* state) const {
    RunContext c = *this;
    c.state_ = state;
    return c;
  }

  // Calls body(ctx_t) for t = 0 .. thread_count() - 1, with ctx_t's
  // thread_index() == t, and returns when all have returned. Inside the
  // body, thread_count() is still the method's count and nested calls run
  // inline.
  template <typename F>
  void parallel(const F& body) {
    parallel_impl([](RunContext& c, void* f) { (*static_cast<const F*>(f))(c); },
                  const_cast<void*>(static_cast<const void*>(&body)), thread_count_);
  }

  // Splits [0, n) into contiguous ranges of `grain` items or more (fewer
  // only when n is) and calls body(ctx_t, begin, end) once for each range,
  // over the threads: each thread starts on its own contiguous share of the
  // ranges (the first share for the calling thread, as a rule, so that a
  // layer and the next find their part of the data in the same core's
  // cache), then takes ranges left in the others' shares, so a thread that
  // starts late or runs slowly holds back little. The
  // ranges depend only on n, grain and thread_count(); which thread runs
  // which range does not, so a body's results for a range must not depend on
  // ctx_t.thread_index() (use it for scratch only). Nothing is called when
  // n <= 0; with one thread, one call covers [0, n).
  template <typename F>
  void parallel_for(int64_t n, int64_t grain, const F& body) {
    if (n <= 0) return;
    const int64_t chunks = split_count(n, grain);
    if (chunks <= 1) {
      body(*this, int64_t(0), n);
      return;
    }
    // task t owns the t-th contiguous run of chunks (the pool's caller
    // claims task 0 first, as a rule), then helps with the others' runs
    int tasks = thread_count_ < chunks ? thread_count_ : static_cast<int>(chunks);
    if (tasks > kMaxTasks) tasks = kMaxTasks;
    std::atomic<int64_t> next[kMaxTasks];
    for (int t = 0; t < tasks; ++t) next[t].store(t * chunks / tasks, std::memory_order_relaxed);
    auto task = [&](RunContext& c) {
      for (int v = 0; v < tasks; ++v) {
        const int owner = (c.thread_index() + v) % tasks;
        const int64_t end = (owner + 1) * chunks / tasks;
        for (int64_t k; (k = next[owner].fetch_add(1, std::memory_order_relaxed)) < end;) {
          body(c, k * n / chunks, (k + 1) * n / chunks);  // sizes differ by at most one
        }
      }
    };
    parallel_impl([](RunContext& c, void* f) { (*static_cast<decltype(task)*>(f))(c); }, &task, tasks);
  }

  // How many ranges parallel_for(n, grain, ...) makes: up to
  // kRangesPerThread per thread, none under `grain` items (but the last).
  static constexpr int kRangesPerThread = 4;
  // At most this many threads split one parallel_for (ThreadPool::kMaxThreads).
  static constexpr int kMaxTasks = 64;
  int64_t split_count(int64_t n, int64_t grain) const {
    if (thread_count_ == 1 || n <= 0) return n > 0 ? 1 : 0;
    if (grain < 1) grain = 1;
    const int64_t by_grain = n / grain > 1 ? n / grain : 1;  // every range >= grain
    const int64_t most = int64_t(thread_count_) * kRangesPerThread;
    return by_grain < most ? by_grain : most;
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
  const StepSink* steps_ = nullptr;
  int thread_index_ = 0;
  int scratch_index_ = 0;  // whose scratch: thread_index_, or the parent's when nested
  bool nested_ = false;    // inside a parallel body: further regions run inline
};

}  // namespace tern
