// One Program shared by threads (DESIGN.md: "Program is immutable and may be
// shared by threads; each thread uses its own Method"): 8 application threads
// load their own Method of the same Program, each with its own MemoryManager,
// and run it many times on the frozen inputs, at the same time. Some methods
// run on one thread, some split their kernels over 2 threads of the
// process-wide pool (which they then share with each other: a region that
// finds its workers busy runs on its caller), some over 3 threads of a
// ThreadPool of their own. Every run must give, bit for bit, what the same
// method gives when nothing else runs.
//
// Built under ThreadSanitizer by `make test-tsan` (build-tsan/, TERN_TSAN),
// with thread_pool_test and executor_test; there it proves the sharing is
// free of data races, here (and under ASan) that the results hold.
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/data_loaders.h"
#include "extension/npy.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"
#include "runtime/core/thread_pool.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"

namespace tern {
namespace {

constexpr int kAppThreads = 8;
constexpr int kRuns = 20;

// The outputs of one execute(): each output's bytes (dtype and sizes are
// compared through them and through `shapes`).
struct Outputs {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::vector<int64_t>> shapes;
  bool operator==(const Outputs& o) const { return bytes == o.bytes && shapes == o.shapes; }
};

// How a thread runs its method: kernel threads, and whose pool.
struct Config {
  int threads;
  bool own_pool;
};
const Config kConfigs[] = {{1, false}, {2, false}, {3, true}};

// One method with memory of its own: arenas and a method allocator.
class OwnMethod {
 public:
  OwnMethod(const Program& program, const Config& config) : pool_(config.own_pool ? new ThreadPool() : nullptr) {
    Result<MethodMeta> meta = program.method_meta("forward");
    if (!meta.ok()) return;
    for (size_t i = 0; i < meta->num_arenas(); ++i) {
      arenas_.emplace_back(new (std::align_val_t(64)) uint8_t[(*meta->arena_size(i) + 63) / 64 * 64]);
      spans_.emplace_back(arenas_.back().get(), static_cast<size_t>(*meta->arena_size(i)));
    }
    allocator_bytes_.reset(new (std::align_val_t(64)) uint8_t[kMethodBytes]);
    allocator_.emplace(allocator_bytes_.get(), kMethodBytes);
    memory_ = MemoryManager{&*allocator_, Span<const Span<uint8_t>>(spans_.data(), spans_.size())};
    MethodOptions options;
    options.threads = config.threads;
    options.pool = pool_.get();
    Result<Method> m = Method::load(program, "forward", memory_, options);
    error_ = m.error();
    if (m.ok()) method_.emplace(std::move(*m));
  }
  Error error() const { return error_; }

  // Run `run`: sets the inputs, executes, copies the outputs (none on an
  // error). Every kStateRuns-th run starts from the initial state: state.tern
  // writes a cache at a step counter that leaves the cache after 3 calls.
  static constexpr int kStateRuns = 3;
  Outputs run(std::vector<NpyArray>& inputs, int run) {
    Outputs out;
    if (run % kStateRuns == 0) method_->reset_state();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (method_->set_input(i, inputs[i].tensor()) != Error::Ok) return out;
    }
    if (method_->execute() != Error::Ok) return out;
    for (size_t i = 0; i < method_->num_outputs(); ++i) {
      const Tensor& t = method_->output(i);
      const uint8_t* p = static_cast<const uint8_t*>(t.data);
      out.bytes.emplace_back(p, p + t.nbytes());
      out.shapes.emplace_back(t.sizes, t.sizes + t.dim);
      out.shapes.back().push_back(static_cast<int64_t>(t.dtype));
    }
    return out;
  }

 private:
  static constexpr size_t kMethodBytes = 16 << 20;
  struct AlignedDelete {
    void operator()(uint8_t* p) const { operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<ThreadPool> pool_;  // outlives the method (declared first)
  std::vector<std::unique_ptr<uint8_t[], AlignedDelete>> arenas_;
  std::vector<Span<uint8_t>> spans_;
  std::unique_ptr<uint8_t[], AlignedDelete> allocator_bytes_;
  std::optional<MemoryAllocator> allocator_;
  MemoryManager memory_;
  Error error_ = Error::NotFound;
  std::optional<Method> method_;
};

class SharedProgram : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
    enable_dynamic_shapes();
  }
};

TEST_P(SharedProgram, test_eight_threads_each_with_its_method_give_the_single_threaded_results) {
  const std::string stem = std::string(TERN_TEST_DATA_DIR) + "/" + GetParam();
  FileDataLoader file;
  ASSERT_EQ(file.open((stem + ".tern").c_str()), Error::Ok);
  Result<Program> loaded = Program::load(file);
  ASSERT_TRUE(loaded.ok()) << last_error_message();
  const Program& program = *loaded;
  std::vector<NpyArray> inputs;
  for (int i = 0;; ++i) {
    NpyArray a;
    if (read_npy((stem + ".input" + std::to_string(i) + ".npy").c_str(), &a) != Error::Ok) break;
    inputs.push_back(std::move(a));
  }

  // What each configuration gives, run after run (state carries over), with
  // nothing else running.
  std::vector<std::vector<Outputs>> want;
  for (const Config& config : kConfigs) {
    OwnMethod m(program, config);
    ASSERT_EQ(m.error(), Error::Ok) << last_error_message();
    want.emplace_back();
    for (int r = 0; r < kRuns; ++r) {
      want.back().push_back(m.run(inputs, r));
      ASSERT_FALSE(want.back().back().bytes.empty()) << last_error_message();
    }
  }

  std::atomic<int> ready{0};
  std::atomic<int> load_errors{0}, wrong_runs{0};
  auto body = [&](int t) {
    const size_t s = static_cast<size_t>(t) % (sizeof(kConfigs) / sizeof(kConfigs[0]));
    std::vector<NpyArray> own_inputs = inputs;  // NpyArray::tensor() is not const
    // start together, so that the loads overlap as much as the runs
    ready.fetch_add(1);
    while (ready.load() < kAppThreads) std::this_thread::yield();
    OwnMethod m(program, kConfigs[s]);
    if (m.error() != Error::Ok) {
      load_errors.fetch_add(1);
      return;
    }
    for (int r = 0; r < kRuns; ++r) {
      if (!(m.run(own_inputs, r) == want[s][static_cast<size_t>(r)])) wrong_runs.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kAppThreads; ++t) threads.emplace_back(body, t);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(load_errors.load(), 0);
  EXPECT_EQ(wrong_runs.load(), 0) << "runs that differ from the single-threaded ones, of " << kAppThreads * kRuns;
}

std::string file_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

// Kernels, the cpu backend, control flow, state, dynamic shapes; attention
// (portable matmul and attention kernels), cpu_chain and cpu_ops_v2 (the cpu
// backend) are the frozen files large enough for their kernels to split
// work over threads: the others run every kernel inline at any thread count.
INSTANTIATE_TEST_SUITE_P(Frozen, SharedProgram,
                         ::testing::Values("v1/kitchen_sink", "v1_1/cpu_block", "v1_2/control_flow", "v1_2/state",
                                           "v1_3/dynamic", "v1_1/attention", "v1_1/cpu_chain", "v1_1/cpu_ops_v2"),
                         file_name);

}  // namespace
}  // namespace tern
