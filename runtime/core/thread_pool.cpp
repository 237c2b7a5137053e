#include "runtime/core/thread_pool.h"

#include <pthread.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include <chrono>
#include <new>

#include "runtime/core/log.h"


namespace tern {
namespace {

// The cursor word: region generation in bits 63..16, task count in 15..8,
// next unclaimed task in 7..0. Count and cursor in one word: a worker that
// read a stale count can never claim a task with it.
constexpr int kGenShift = 16;
constexpr uint64_t kByte = 0xff;

uint32_t gen_of(uint64_t cursor) { return static_cast<uint32_t>(cursor >> kGenShift); }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

// The CPU this thread runs on, -1 where the platform does not say.
int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// Moves this thread off `cpu` if another CPU is allowed to it: its affinity
// narrowed to the others (which migrates it now), then restored (which leaves
// it where it is).
void move_off_cpu(int cpu) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  if (!CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2) return;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (sched_setaffinity(0, sizeof(others), &others) == 0) (void)sched_setaffinity(0, sizeof(allowed), &allowed);
#else
  (void)cpu;
#endif
}

int64_t now_micros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (int i = 0; i < num_workers_.load(); ++i) pthread_join(threads_[i], nullptr);
}

ThreadPool& ThreadPool::process_pool() {
  // Never destroyed, on purpose: workers may still be spinning when static
  // destructors run, and joining them there would order exit against the
  // application's own threads. Built in static storage, not on the heap: the
  // core takes no heap memory (DESIGN.md), and a failed `new` here could only
  // abort.
  alignas(ThreadPool) static unsigned char storage[sizeof(ThreadPool)];
  static ThreadPool* pool = new (storage) ThreadPool();
  return *pool;
}

void* ThreadPool::worker_main(void* start) {
  const WorkerStart& w = *static_cast<const WorkerStart*>(start);
  w.pool->work(w.gen);
  return nullptr;
}

Error ThreadPool::reserve(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    TERN_LOG_ERROR("thread pool: %d threads requested, 1 to %d supported", threads, kMaxThreads);
    return Error::InvalidArgument;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  while (num_workers_ + 1 < threads) {
    // The worker waits for regions after this one: one that starts between
    // here and the thread's first instruction is not missed.
    starts_[num_workers_] = {this, gen_of(cursor_.load(std::memory_order_acquire))};
    if (pthread_create(&threads_[num_workers_], nullptr, worker_main, &starts_[num_workers_]) != 0) {
      TERN_LOG_ERROR("thread pool: cannot start worker %d of %d", num_workers_ + 1, threads - 1);
      return Error::NotSupported;
    }
    ++num_workers_;
    // Wait until the worker runs: a thread's first steps (its runtime's
    // per-thread setup, first clock read) belong to load time, not to the
    // first inference.
    while (started_.load(std::memory_order_acquire) < num_workers_) cpu_relax();
  }
  return Error::Ok;
}

int ThreadPool::claim(uint32_t gen) {
  uint64_t cur = cursor_.load(std::memory_order_acquire);
  for (;;) {
    if (gen_of(cur) != gen) return -1;
    const int next = static_cast<int>(cur & kByte), n = static_cast<int>((cur >> 8) & kByte);
    if (next >= n) return -1;
    if (cursor_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      return next;
    }
  }
}

void ThreadPool::wake_sleepers() {
  { std::lock_guard<std::mutex> lock(mutex_); }  // a sleeper is either waiting or sees the new region
  wake_.notify_all();
}

void ThreadPool::run(int n, TaskFn task, void* arg) {
  if (n <= 0) return;
  if (n > kMaxThreads) TERN_ABORT("thread pool: a region of %d tasks (at most %d)", n, kMaxThreads);
  if (n == 1 || num_workers_.load(std::memory_order_relaxed) == 0 || busy_.exchange(true, std::memory_order_acquire)) {
    for (int i = 0; i < n; ++i) task(arg, i);
    return;
  }
  task_.store(task, std::memory_order_relaxed);
  arg_.store(arg, std::memory_order_relaxed);
  caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = gen_of(cursor_.load(std::memory_order_relaxed)) + 1;
  cursor_.store((uint64_t(gen) << kGenShift) | (uint64_t(n) << 8), std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_sleepers();
  for (int i; (i = claim(gen)) >= 0;) {
    task(arg, i);
    done_.fetch_add(1, std::memory_order_release);
  }
  while (done_.load(std::memory_order_acquire) != n) cpu_relax();
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::work(uint32_t seen) {
  (void)now_micros();
  started_.fetch_add(1, std::memory_order_release);
  bool woke = true;  // started, or woken: the scheduler placed this thread (the header says why it matters)
  for (;;) {
    uint32_t gen;
    int64_t spin_start = now_micros();
    for (int k = 1; (gen = gen_of(cursor_.load(std::memory_order_acquire))) == seen; ++k) {
      if (stop_.load(std::memory_order_relaxed)) return;
      cpu_relax();
      if (k % 256 == 0 && now_micros() - spin_start > kSpinMicros) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        while (gen_of(cursor_.load(std::memory_order_seq_cst)) == seen && !stop_.load()) wake_.wait(lock);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        spin_start = now_micros();
        woke = true;
      }
    }
    seen = gen;
    if (woke) {
      woke = false;
      const int cpu = current_cpu();
      if (cpu >= 0 && cpu == caller_cpu_.load(std::memory_order_relaxed)) move_off_cpu(cpu);
    }
    // The fields of region `gen` (or of a later one, whose tasks claim()
    // then refuses): written before the cursor that announced it.
    const TaskFn task = task_.load(std::memory_order_relaxed);
    void* const arg = arg_.load(std::memory_order_relaxed);
    for (int i; (i = claim(gen)) >= 0;) {
      task(arg, i);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
}

}  // namespace tern
