// ThreadPool: persistent worker threads that run the tasks of a parallel
// region. Kernels never see it: they split their work through RunContext
// (runtime/kernel/kernel.h), which calls run() when a method has more than
// one thread.
//
//   tern::ThreadPool& pool = tern::ThreadPool::process_pool();
//   TERN_CHECK_OK(pool.reserve(4));            // at load: starts workers once
//   pool.run(4, [](void* arg, int task) { ... }, &arg);   // per inference
//
// A region of n tasks runs task(arg, 0) .. task(arg, n - 1), each exactly
// once, on the caller and up to n - 1 workers, and returns when all have
// returned. Which OS thread runs which task is not fixed; callers that need
// the same results whatever the scheduling make each task's work depend only
// on its index (RunContext gives each index its own scratch).
//
// Costs: run() allocates nothing and makes no system call while workers are
// spinning; they spin for about kSpinMicros after a region, then sleep on a
// condition variable (a region then costs one wake-up). n == 1 runs the task
// inline with no synchronization at all.
//
// A woken worker may be put on the CPU of the thread that woke it (Linux does
// that for a thread it thinks shares its cache), where the two then take turns
// until load balancing moves one, a few milliseconds later: a first run after
// load at 2 threads took 2x to 3x the median in about one process in three
// (bert_minilm_32, every region's worker on the caller's CPU). So the first
// region after a sleep, a worker that finds itself on the caller's CPU moves
// off it (Linux: its affinity narrowed to the other CPUs allowed, then put
// back; two system calls, once per wake-up at most).
//
// Thread safety: run() may be called from any number of threads at once; one
// region has the workers at a time, and a call that finds them busy (another
// Method on another application thread, or a region started from inside a
// task) runs its tasks on the calling thread, one after the other. reserve()
// is for load time and is serialized internally.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "runtime/core/error.h"

namespace tern {

class ThreadPool {
 public:
  using TaskFn = void (*)(void* arg, int task);

  // At most this many threads (the caller included) per region.
  static constexpr int kMaxThreads = 64;
  // How long an idle worker spins before it sleeps.
  static constexpr int kSpinMicros = 200;

  ThreadPool() = default;
  ~ThreadPool();  // stops and joins the workers
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The pool shared by every Method of the process (created empty on first
  // use; workers start at the first reserve()). Never destroyed before exit.
  static ThreadPool& process_pool();

  // Makes sure `threads` threads (the caller plus threads - 1 workers) can run
  // a region at once, starting workers as needed and returning once they
  // run. Load time only (creating a thread takes memory). InvalidArgument
  // above kMaxThreads; NotSupported if the platform cannot create a thread.
  Error reserve(int threads);
  // The caller plus the workers started so far.
  int max_threads() const { return num_workers_.load() + 1; }

  // Runs task(arg, i) for i in [0, n) and waits for all of them (see above).
  void run(int n, TaskFn task, void* arg);

 private:
  struct WorkerStart {
    ThreadPool* pool;
    uint32_t gen;  // the last region before the worker started
  };
  static void* worker_main(void* start);
  void work(uint32_t seen);
  // Claims the next task index of region `gen`, or returns -1.
  int claim(uint32_t gen);
  void wake_sleepers();

  // The region being run: its generation (high 32 bits) and next unclaimed
  // task (low 32 bits) in one word, so a worker can never claim a task of a
  // region other than the one whose fields it read.
  std::atomic<uint64_t> cursor_{0};
  std::atomic<TaskFn> task_{nullptr};
  std::atomic<void*> arg_{nullptr};
  std::atomic<int> num_tasks_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::atomic<int> started_{0};  // workers that reached their loop
  std::atomic<int> caller_cpu_{-1};  // the CPU the current region's caller ran on (-1: unknown)
  std::mutex mutex_;  // sleeping and reserve() only
  std::condition_variable wake_;
  std::atomic<int> num_workers_{0};
  pthread_t threads_[kMaxThreads] = {};
  WorkerStart starts_[kMaxThreads] = {};
};

}  // namespace tern
