// ThreadPool (runtime/core/thread_pool.h) and the thread side of the
// kernel contract, RunContext::parallel / parallel_for (runtime/kernel/kernel.h).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "runtime/kernel/kernel.h"
#include "runtime/core/cpu_info.h"
#include "runtime/core/thread_pool.h"

namespace tern {
namespace {

TEST(ThreadPool, test_run_calls_every_task_exactly_once) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(4), Error::Ok);
  EXPECT_EQ(pool.max_threads(), 4);
  for (int n : {1, 2, 3, 4, 7, 64}) {
    std::vector<std::atomic<int>> calls(n);
    for (int round = 0; round < 200; ++round) {
      pool.run(n, [](void* arg, int t) { (*static_cast<std::vector<std::atomic<int>>*>(arg))[t]++; }, &calls);
    }
    for (int t = 0; t < n; ++t) EXPECT_EQ(calls[t].load(), 200) << "task " << t << " of " << n;
  }
}

TEST(ThreadPool, test_tasks_run_on_several_threads) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(2), Error::Ok);
  // Each task waits until both tasks have started: only two threads finish.
  std::atomic<int> started{0};
  std::set<std::thread::id> ids;
  std::mutex m;
  struct Arg { std::atomic<int>* started; std::set<std::thread::id>* ids; std::mutex* m; } arg{&started, &ids, &m};
  pool.run(2, [](void* p, int) {
    Arg& a = *static_cast<Arg*>(p);
    a.started->fetch_add(1);
    while (a.started->load() < 2) {}
    std::lock_guard<std::mutex> lock(*a.m);
    a.ids->insert(std::this_thread::get_id());
  }, &arg);
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, test_workers_wake_after_sleeping) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(3), Error::Ok);
  std::atomic<int> sum{0};
  for (int round = 0; round < 3; ++round) {
    // longer than the spin: the workers are asleep when the next region starts
    std::this_thread::sleep_for(std::chrono::microseconds(ThreadPool::kSpinMicros * 5));
    pool.run(3, [](void* p, int t) { static_cast<std::atomic<int>*>(p)->fetch_add(t + 1); }, &sum);
  }
  EXPECT_EQ(sum.load(), 3 * 6);
}

TEST(ThreadPool, test_concurrent_callers_each_get_all_their_tasks) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(3), Error::Ok);
  constexpr int kCallers = 4, kRounds = 300;
  std::atomic<long> totals[kCallers] = {};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        pool.run(3, [](void* p, int t) { static_cast<std::atomic<long>*>(p)->fetch_add(t + 1); }, &totals[c]);
      }
    });
  }
  for (auto& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(totals[c].load(), kRounds * 6L) << "caller " << c;
}

TEST(ThreadPool, test_reserve_rejects_out_of_range_counts) {
  ThreadPool pool;
  EXPECT_EQ(pool.reserve(0), Error::InvalidArgument);
  EXPECT_EQ(pool.reserve(ThreadPool::kMaxThreads + 1), Error::InvalidArgument);
  EXPECT_EQ(pool.max_threads(), 1);
}

TEST(ThreadPool, test_physical_core_count_is_positive_and_at_most_online_cpus) {
  EXPECT_GE(physical_core_count(), 1);
  EXPECT_LE(physical_core_count(), static_cast<int>(std::thread::hardware_concurrency()));
}

// ------------------------------------------------------------- RunContext

struct Scratch {
  std::vector<uint8_t> bytes;
  size_t stride;
  Scratch(int threads, size_t per_thread) : bytes(per_thread * threads + 64), stride(per_thread) {}
  void* base() { return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(bytes.data()) + 63) & ~uintptr_t(63)); }
};

TEST(RunContext, test_parallel_for_covers_the_range_once_in_ranges_of_at_least_the_grain) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(3), Error::Ok);
  for (int threads : {1, 2, 3}) {
    RunContext ctx(nullptr, nullptr, 0, threads, 0, &pool);
    for (int64_t n : {0, 1, 2, 5, 100, 1001}) {
      for (int64_t grain : {1, 7, 1000}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<int> pieces{0}, short_pieces{0};
        ctx.parallel_for(n, grain, [&](RunContext& c, int64_t b, int64_t e) {
          EXPECT_LT(b, e);
          EXPECT_LT(c.thread_index(), threads);
          pieces++;
          if (e - b < grain && e - b != n) short_pieces++;
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i;
        EXPECT_EQ(pieces.load(), ctx.split_count(n, grain));
        EXPECT_EQ(short_pieces.load(), 0) << "a range under the grain, n " << n << " grain " << grain;
        EXPECT_LE(pieces.load(), threads * RunContext::kRangesPerThread);
        if (threads == 1) {
          EXPECT_LE(pieces.load(), 1);
        } else if (n >= grain * threads) {
          EXPECT_GE(pieces.load(), threads) << "n " << n << " grain " << grain;
        }
      }
    }
  }
}

TEST(RunContext, test_each_thread_index_has_its_own_scratch) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(3), Error::Ok);
  Scratch s(3, 128);
  RunContext ctx(nullptr, s.base(), 100, 3, s.stride, &pool);
  std::atomic<int> bodies{0};
  ctx.parallel([&](RunContext& c) {
    EXPECT_EQ(c.scratch(), static_cast<uint8_t*>(s.base()) + c.thread_index() * s.stride);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c.scratch()) % 64, 0u);
    memset(c.scratch(), c.thread_index(), 100);
    bodies++;
  });
  EXPECT_EQ(bodies.load(), 3);
  for (int t = 0; t < 3; ++t) EXPECT_EQ(static_cast<uint8_t*>(s.base())[t * s.stride + 99], t);
}

TEST(RunContext, test_nested_regions_run_inline_on_the_parent_scratch) {
  ThreadPool pool;
  ASSERT_EQ(pool.reserve(2), Error::Ok);
  Scratch s(2, 64);
  RunContext ctx(nullptr, s.base(), 64, 2, s.stride, &pool);
  std::atomic<int> inner{0};
  ctx.parallel([&](RunContext& outer) {
    void* mine = outer.scratch();
    std::thread::id me = std::this_thread::get_id();
    outer.parallel([&](RunContext& c) {
      EXPECT_EQ(c.scratch(), mine);  // the sibling thread is using the other block
      EXPECT_EQ(std::this_thread::get_id(), me);
      inner++;
    });
  });
  EXPECT_EQ(inner.load(), 4);
}

TEST(RunContext, test_one_thread_runs_the_body_inline_without_a_pool) {
  RunContext ctx(nullptr, nullptr, 0);
  std::thread::id me = std::this_thread::get_id();
  int calls = 0;
  ctx.parallel([&](RunContext& c) {
    EXPECT_EQ(c.thread_index(), 0);
    EXPECT_EQ(std::this_thread::get_id(), me);
    calls++;
  });
  ctx.parallel_for(10, 1, [&](RunContext&, int64_t b, int64_t e) { calls += int(e - b); });
  EXPECT_EQ(calls, 11);
}

}  // namespace
}  // namespace tern
