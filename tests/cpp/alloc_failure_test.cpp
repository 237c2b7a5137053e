// Allocation failure (issue 8): each allocation of a load fails in turn, alone.
//
//   Method::load   takes every byte from the application's MemoryAllocator
//                  (memory_manager.h); an InjectingAllocator makes exactly its
//                  k-th allocate() fail, for every k of a successful load of
//                  each frozen file (tests/data/v1*/).
//   tern::Module   (extension/) takes its memory from the heap; this binary
//                  replaces the global operator new/delete and fails the k-th
//                  heap allocation made on the test's thread while a HeapWatch
//                  is armed, for load(), load_buffer() and method().
//   Program::load  over a DataLoader whose load() fails.
//
// Each failure must be a clean Error (OutOfMemory, whose log line names the
// bytes that could not be had), leave nothing loaded (the Result holds no
// Method; the Module has no program and no method) and nothing allocated
// (delegates destroyed, Module's heap blocks freed: counted here, and checked
// by LeakSanitizer in build-asan/), and the same allocator, reset, or the
// same Module must then load the file and give the same outputs, bit for bit,
// as a load that never failed (and the recorded .output*.npy, within the
// tolerance of format_compat_test).
//
// The heap counters also prove two rules: Program::load and Method::load take
// nothing from the heap (DESIGN.md), and Module allocates only through the
// non-throwing operator new, so that each of its allocations can fail here
// (C-level allocations are counted too: by interposing malloc and friends, or
// under a sanitizer, which owns malloc, through its allocation hook).
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/data_loaders.h"
#include "extension/module.h"
#include "extension/npy.h"
#include "runtime/core/log.h"
#include "heap_hooks.h"
#include "tests/cpp/compare.h"
#include "runtime_test_util.h"
#include "test_backend.h"

namespace {

// What the heap saw on this thread while armed (constant-initialized: safe to
// touch from inside malloc).
struct HeapState {
  bool armed = false;
  long calls = 0;      // operator new calls, every form
  long throwing = 0;   // of which the throwing forms
  long allocated = 0;  // of which succeeded
  long fail_at = -1;   // the call to fail (0-based), or -1
  long live = 0;       // blocks allocated minus blocks freed through operator new/delete
  long c_level = 0;    // see direct_c_allocations()
};
thread_local HeapState t_heap;

}  // namespace

namespace tern {
namespace test {
void on_c_allocation() {
  if (t_heap.armed) ++t_heap.c_level;
}
}  // namespace test
}  // namespace tern

namespace {
using tern::test::raw_free;
using tern::test::raw_malloc;
using tern::test::raw_memalign;
// C-level allocations not made by operator new: a sanitizer's hook also sees
// the mallocs of operator new, which the interposed functions do not.
#if defined(TERN_TEST_SANITIZER)
long direct_c_allocations() { return t_heap.c_level - t_heap.allocated; }
#else
long direct_c_allocations() { return t_heap.c_level; }
#endif
}  // namespace

namespace {

// One operator new call: nullptr when it is the one to fail.
void* heap_allocate(size_t n, size_t alignment, bool throwing) {
  if (n == 0) n = 1;
  if (t_heap.armed) {
    const long call = t_heap.calls++;
    t_heap.throwing += throwing;
    if (call == t_heap.fail_at) return nullptr;
  }
  void* p = alignment <= alignof(std::max_align_t) ? raw_malloc(n) : raw_memalign(alignment, n);
  if (p != nullptr && t_heap.armed) {
    ++t_heap.allocated;
    ++t_heap.live;
  }
  return p;
}

void heap_free(void* p) {
  if (p != nullptr && t_heap.armed) --t_heap.live;
  raw_free(p);
}

void* heap_allocate_or_throw(size_t n, size_t alignment) {
  void* p = heap_allocate(n, alignment, true);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(size_t n) { return heap_allocate_or_throw(n, 0); }
void* operator new[](size_t n) { return heap_allocate_or_throw(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return heap_allocate_or_throw(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return heap_allocate_or_throw(n, static_cast<size_t>(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return heap_allocate(n, 0, false); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return heap_allocate(n, 0, false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return heap_allocate(n, static_cast<size_t>(a), false);
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return heap_allocate(n, static_cast<size_t>(a), false);
}
void operator delete(void* p) noexcept { heap_free(p); }
void operator delete[](void* p) noexcept { heap_free(p); }
void operator delete(void* p, size_t) noexcept { heap_free(p); }
void operator delete[](void* p, size_t) noexcept { heap_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { heap_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { heap_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { heap_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { heap_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { heap_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { heap_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { heap_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { heap_free(p); }

namespace tern {
namespace {

using test::AlignedBytes;

// Counts (and with fail_at >= 0, fails one of) the heap allocations this
// thread makes while it is armed.
class HeapWatch {
 public:
  explicit HeapWatch(long fail_at = -1) {
    t_heap = HeapState();
    t_heap.fail_at = fail_at;
    t_heap.armed = true;
  }
  ~HeapWatch() { stop(); }
  void stop() { t_heap.armed = false; }
  long calls() const { return t_heap.calls; }
  long throwing() const { return t_heap.throwing; }
  long live() const { return t_heap.live; }
  long direct_c() const { return direct_c_allocations(); }
};

TEST(HeapWatch, test_counts_fails_and_tracks_every_form) {
  // the checks below are only as good as the counters
  {
    HeapWatch w;
    int* a = new int(1);
    int* b = new (std::nothrow) int[3];
    void* c = operator new(100, std::align_val_t(64), std::nothrow);
    EXPECT_EQ(w.calls(), 3);
    EXPECT_EQ(w.throwing(), 1);
    EXPECT_EQ(w.live(), 3);
    delete a;
    delete[] b;
    operator delete(c, std::align_val_t(64));
    EXPECT_EQ(w.live(), 0);
    EXPECT_EQ(w.direct_c(), 0);
    void* volatile m = malloc(10);
    EXPECT_EQ(w.direct_c(), 1) << "a malloc outside operator new is seen";
    free(m);
  }
  {
    HeapWatch w(1);
    int* a = new (std::nothrow) int(1);
    int* b = new (std::nothrow) int(2);
    int* c = new (std::nothrow) int(3);
    EXPECT_NE(a, nullptr);
    EXPECT_EQ(b, nullptr) << "the second call fails";
    EXPECT_NE(c, nullptr);
    delete a;
    delete c;
    EXPECT_EQ(w.live(), 0);
  }
}

// A bump allocator over `size` bytes at `base` whose k-th allocate() call
// (0-based, since rearm) fails.
class InjectingAllocator final : public MemoryAllocator {
 public:
  InjectingAllocator(void* base, size_t size) : MemoryAllocator(base, size) {}

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    const long call = calls_++;
    if (call == fail_at_) {
      failed_size_ = size;
      return nullptr;
    }
    return MemoryAllocator::allocate(size, alignment);
  }
  // Frees everything; from now on call k fails (-1: none does).
  void rearm(long k) {
    reset();
    calls_ = 0;
    fail_at_ = k;
    failed_size_ = 0;
  }
  long calls() const { return calls_; }
  size_t failed_size() const { return failed_size_; }

 private:
  long calls_ = 0;
  long fail_at_ = -1;
  size_t failed_size_ = 0;
};

// The tern_test backend (test_backend.h) behind a wrapper that counts the
// handles it has initialized and not yet destroyed.
std::atomic<int> g_live_handles{0};

class CountingTestBackend final : public Backend {
 public:
  const char* name() const override { return inner_.name(); }
  Result<void*> init(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                     Span<EValue* const> outputs) const override {
    Result<void*> h = inner_.init(ctx, payload, inputs, outputs);
    if (h.ok()) ++g_live_handles;
    return h;
  }
  Error execute(RunContext& ctx, void* handle, EValue* const* args) const override {
    return inner_.execute(ctx, handle, args);
  }
  void destroy(void* handle) const override {
    --g_live_handles;
    inner_.destroy(handle);
  }

 private:
  test::TestBackend inner_;
};

void register_everything() {
  static const CountingTestBackend counting;
  static const bool once = [] {
    EXPECT_EQ(register_portable_kernels(), Error::Ok);
    EXPECT_EQ(register_cpu_backend(), Error::Ok);
    EXPECT_EQ(register_backend(&counting), Error::Ok);
    test::register_test_kernels();
    enable_dynamic_shapes();
    // Thousands of expected errors; last_error_message() still records each.
    set_log_level(LogLevel::Fatal);
    return true;
  }();
  (void)once;
}

// True if the decimal `n` appears in `s` as a whole number.
bool names_number(const char* s, size_t n) {
  const std::string want = std::to_string(n);
  for (const char* p = s; (p = strstr(p, want.c_str())) != nullptr; ++p) {
    const bool starts = p == s || !isdigit(static_cast<unsigned char>(p[-1]));
    if (starts && !isdigit(static_cast<unsigned char>(p[want.size()]))) return true;
  }
  return false;
}

// Module's heap blocks are not the method allocator's requests (HeapAllocator
// adds a header): its messages name some bytes, and what ran out.
bool says_out_of_memory(const char* s) {
  return strstr(s, " bytes") != nullptr && (strstr(s, "out of memory") != nullptr || strstr(s, "cannot allocate"));
}

// A method's outputs after one execute(): dtype, sizes and bytes of each.
struct Output {
  ScalarType dtype;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
  bool operator==(const Output& o) const { return dtype == o.dtype && sizes == o.sizes && bytes == o.bytes; }
};
using Outputs = std::vector<Output>;

Output output_of(const Tensor& t) {
  const uint8_t* p = static_cast<const uint8_t*>(t.data);
  return {t.dtype, std::vector<int64_t>(t.sizes, t.sizes + t.dim), std::vector<uint8_t>(p, p + t.nbytes())};
}

// Sets the inputs, runs once, copies the outputs (empty on failure).
Outputs run(Method& m, std::vector<NpyArray>& inputs) {
  if (m.num_inputs() != inputs.size()) return {};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (m.set_input(i, inputs[i].tensor()) != Error::Ok) return {};
  }
  if (m.execute() != Error::Ok) return {};
  Outputs out;
  for (size_t i = 0; i < m.num_outputs(); ++i) out.push_back(output_of(m.output(i)));
  return out;
}

Outputs outputs_of(Span<const Tensor> ts) {
  Outputs out;
  for (const Tensor& t : ts) out.push_back(output_of(t));
  return out;
}

// The outputs recorded at export: float32 within format_compat_test's
// tolerance, other dtypes exactly.
void expect_recorded(const Outputs& got, std::vector<NpyArray>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    Tensor w = want[i].tensor();
    const Output& g = got[i];
    ASSERT_EQ(g.dtype, w.dtype) << "output " << i;
    ASSERT_EQ(g.sizes, std::vector<int64_t>(w.sizes, w.sizes + w.dim)) << "output " << i;
    if (w.dtype != ScalarType::Float32) {
      EXPECT_EQ(memcmp(g.bytes.data(), w.data, w.nbytes()), 0) << "output " << i;
      continue;
    }
    const float* gf = reinterpret_cast<const float*>(g.bytes.data());
    EXPECT_TRUE(test::all_close(gf, w.data_as<float>(), size_t(w.numel), 1e-4, -1, "output " + std::to_string(i)));
  }
}

// A frozen file: its bytes, program and recorded inputs and outputs.
struct Frozen {
  explicit Frozen(const std::string& name) : path(std::string(TERN_TEST_DATA_DIR) + "/" + name + ".tern") {
    register_everything();
    EXPECT_EQ(file.open(path.c_str()), Error::Ok) << path;
    Result<Program> p = Program::load(file);
    EXPECT_TRUE(p.ok()) << path << ": " << last_error_message();
    if (p.ok()) program.emplace(std::move(*p));
    const std::string stem = path.substr(0, path.size() - 5);
    for (const char* kind : {"input", "output"}) {
      for (int i = 0;; ++i) {
        NpyArray a;
        if (read_npy((stem + "." + kind + std::to_string(i) + ".npy").c_str(), &a) != Error::Ok) break;
        (kind[0] == 'i' ? inputs : outputs).push_back(std::move(a));
      }
    }
    EXPECT_FALSE(outputs.empty()) << path;
  }
  std::string path;
  FileDataLoader file;
  std::optional<Program> program;
  std::vector<NpyArray> inputs, outputs;
};

// Planned arenas for "forward" of a program, sized from its MethodMeta.
struct Arenas {
  explicit Arenas(const Program& program) {
    Result<MethodMeta> meta = program.method_meta("forward");
    for (size_t i = 0; meta.ok() && i < meta->num_arenas(); ++i) buffers.emplace_back(*meta->arena_size(i));
    for (AlignedBytes& b : buffers) spans.emplace_back(b.data(), b.size());
  }
  Span<const Span<uint8_t>> planned() const { return {spans.data(), spans.size()}; }
  std::vector<AlignedBytes> buffers;
  std::vector<Span<uint8_t>> spans;
};

// "forward" and "second", each x [2, 3] -> relu(x) + 1.
test::ProgramBuilder two_methods() {
  test::ProgramBuilder pb;
  for (const char* name : {"forward", "second"}) test::relu_add_one_method(pb.method(name));
  return pb;
}

// The frozen files, each with every feature of its format version: kernels,
// the cpu backend, the tern_test backend, control flow, state, dynamic shapes.
const char* const kFiles[] = {"v1/kitchen_sink",  "v1_1/attention",     "v1_1/cpu_block",
                              "v1_1/cpu_ops_v2",  "v1_1/delegated",     "v1_2/control_flow",
                              "v1_2/state",       "v1_3/dynamic"};

struct Case {
  const char* file;
  int threads;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file << " with " << c.threads << " threads"; }

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = std::string(info.param.file) + "_threads" + std::to_string(info.param.threads);
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

std::vector<Case> method_cases() {
  std::vector<Case> cases;
  for (const char* f : kFiles) cases.push_back({f, 1});
  // More than one thread: scratch per thread, the pool reserved at load.
  for (const char* f : {"v1/kitchen_sink", "v1_1/cpu_block", "v1_1/delegated"}) cases.push_back({f, 2});
  return cases;
}

class MethodLoadFailure : public ::testing::TestWithParam<Case> {};

TEST_P(MethodLoadFailure, test_each_allocation_failing_is_out_of_memory_and_the_reload_runs_the_same) {
  Frozen f(GetParam().file);
  ASSERT_TRUE(f.program.has_value());
  const Program& program = *f.program;
  MethodOptions options;
  options.threads = GetParam().threads;
  Arenas arenas(program);
  AlignedBytes pool(32 << 20);
  InjectingAllocator alloc(pool.data(), pool.size());
  MemoryManager memory{&alloc, arenas.planned()};
  // The process pool's workers start once, at their first load; their stacks
  // come from the system (MethodLoadHeap below checks the pool itself).
  if (options.threads > 1) {
    ASSERT_EQ(ThreadPool::process_pool().reserve(options.threads), Error::Ok);
  }

  // A load that does not fail: how many allocations, and what it computes.
  long n = 0;
  Outputs want;
  {
    HeapWatch heap;
    Result<Method> m = Method::load(program, "forward", memory, options);
    heap.stop();
    ASSERT_TRUE(m.ok()) << last_error_message();
    EXPECT_EQ(heap.calls(), 0) << "Method::load took memory from the heap";
    EXPECT_EQ(heap.direct_c(), 0) << "Method::load took memory from the heap";
    n = alloc.calls();
    want = run(*m, f.inputs);
    expect_recorded(want, f.outputs);
  }
  ASSERT_GT(n, 0);
  EXPECT_EQ(g_live_handles.load(), 0);

  for (long k = 0; k < n; ++k) {
    SCOPED_TRACE("allocation " + std::to_string(k) + " of " + std::to_string(n) + " fails");
    alloc.rearm(k);
    clear_last_error();
    {
      Result<Method> m = Method::load(program, "forward", memory, options);
      ASSERT_FALSE(m.ok()) << "the method loaded without the memory it asked for";
      EXPECT_EQ(m.error(), Error::OutOfMemory) << last_error_message();
      EXPECT_TRUE(names_number(last_error_message(), alloc.failed_size()))
          << "the message does not name the " << alloc.failed_size() << " bytes: " << last_error_message();
    }
    EXPECT_EQ(g_live_handles.load(), 0) << "a delegate initialized before the failure was not destroyed";
    alloc.rearm(-1);
    Result<Method> again = Method::load(program, "forward", memory, options);
    ASSERT_TRUE(again.ok()) << last_error_message();
    EXPECT_TRUE(run(*again, f.inputs) == want) << "outputs differ from the first load's";
  }
  EXPECT_EQ(g_live_handles.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Frozen, MethodLoadFailure, ::testing::ValuesIn(method_cases()), case_name);

// The first Method::load with threads starts the process-wide pool's workers:
// the threads take their stacks from the system, the pool itself nothing from
// the heap. (ctest runs each test in a process of its own, so the pool is
// created here.)
TEST(MethodLoadHeap, test_starting_the_process_pool_takes_nothing_from_operator_new) {
  Frozen f("v1/kitchen_sink");
  ASSERT_TRUE(f.program.has_value());
  Arenas arenas(*f.program);
  AlignedBytes pool(32 << 20);
  MemoryAllocator alloc(pool.data(), pool.size());
  MemoryManager memory{&alloc, arenas.planned()};
  MethodOptions options;
  options.threads = 3;
  HeapWatch heap;
  Result<Method> m = Method::load(*f.program, "forward", memory, options);
  heap.stop();
  ASSERT_TRUE(m.ok()) << last_error_message();
  EXPECT_EQ(heap.calls(), 0);
}

// Module: every heap allocation of load(), load_buffer() and method().

enum class Entry { LoadFile, LoadMmap, LoadBuffer };

struct ModuleCase {
  const char* file;
  Entry entry;
};

void PrintTo(const ModuleCase& c, std::ostream* os) { *os << c.file << " entry " << static_cast<int>(c.entry); }

std::string module_case_name(const ::testing::TestParamInfo<ModuleCase>& info) {
  static const char* const kEntries[] = {"load_file", "load_mmap", "load_buffer"};
  std::string s = std::string(info.param.file) + "_" + kEntries[static_cast<int>(info.param.entry)];
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

std::vector<ModuleCase> module_cases() {
  std::vector<ModuleCase> cases;
  for (const char* f : kFiles) cases.push_back({f, Entry::LoadFile});
  for (const char* f : {"v1/kitchen_sink", "v1_1/cpu_block", "v1_3/dynamic"}) {
    cases.push_back({f, Entry::LoadMmap});
    cases.push_back({f, Entry::LoadBuffer});
  }
  return cases;
}

class ModuleLoadFailure : public ::testing::TestWithParam<ModuleCase> {
 protected:
  // load(), load(File) or load_buffer() of the file, on one thread.
  Error load(Module& m, const Frozen& f) {
    const Module::Options options{GetParam().entry == Entry::LoadFile ? Module::LoadMode::File : Module::LoadMode::Mmap,
                                  1};
    if (GetParam().entry != Entry::LoadBuffer) return m.load(f.path.c_str(), options);
    return m.load_buffer(bytes.data(), bytes.size(), options);
  }
  // The buffer load_buffer() reads: the test's, made before any heap is watched.
  void SetUp() override {
    FileDataLoader file;
    ASSERT_EQ(file.open((std::string(TERN_TEST_DATA_DIR) + "/" + GetParam().file + ".tern").c_str()), Error::Ok);
    bytes = AlignedBytes(*file.load(0, file.size()), file.size());
  }
  AlignedBytes bytes;
};

TEST_P(ModuleLoadFailure, test_each_heap_allocation_failing_is_out_of_memory_and_leaves_the_module_empty) {
  Frozen f(GetParam().file);
  std::vector<Tensor> in;
  for (NpyArray& a : f.inputs) in.push_back(a.tensor());
  const Span<const Tensor> inputs(in.data(), in.size());

  long n = 0;
  Outputs want;
  {
    Module module;
    HeapWatch heap;
    const Error e = load(module, f);
    heap.stop();
    ASSERT_EQ(e, Error::Ok) << last_error_message();
    EXPECT_EQ(heap.throwing(), 0) << "Module allocates with a throwing operator new";
    EXPECT_EQ(heap.direct_c(), 0) << "Module allocates around operator new, where no failure can be injected";
    n = heap.calls();
    auto out = module.forward(inputs);
    ASSERT_TRUE(out.ok()) << last_error_message();
    want = outputs_of(*out);
    expect_recorded(want, f.outputs);
  }
  ASSERT_GT(n, 0);

  for (long k = 0; k < n; ++k) {
    SCOPED_TRACE("heap allocation " + std::to_string(k) + " of " + std::to_string(n) + " fails");
    Module module;
    clear_last_error();
    HeapWatch heap(k);
    const Error e = load(module, f);
    EXPECT_EQ(heap.live(), 0) << "the failed load kept heap blocks";
    heap.stop();
    EXPECT_EQ(e, Error::OutOfMemory) << last_error_message();
    EXPECT_TRUE(says_out_of_memory(last_error_message())) << last_error_message();
    EXPECT_EQ(module.method("forward"), nullptr) << "a method is usable after the load failed";
    EXPECT_FALSE(module.forward(inputs).ok());
    ASSERT_EQ(load(module, f), Error::Ok) << last_error_message();
    auto out = module.forward(inputs);
    ASSERT_TRUE(out.ok()) << last_error_message();
    EXPECT_TRUE(outputs_of(*out) == want) << "outputs differ from the first load's";
  }
  EXPECT_EQ(g_live_handles.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Frozen, ModuleLoadFailure, ::testing::ValuesIn(module_cases()), module_case_name);

TEST(ModuleMethodFailure, test_each_heap_allocation_of_method_failing_leaves_no_method_and_the_module_usable) {
  register_everything();
  const AlignedBytes bytes = two_methods().build();
  float x[6] = {1, -2, 3, -4, 5, -6};
  Tensor input = make_tensor(x, ScalarType::Float32, {2, 3});
  const std::vector<float> want = {2, 1, 4, 1, 6, 1};
  auto floats = [](const Tensor& t) { return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel); };

  long n = 0;
  {
    Module module;
    ASSERT_EQ(module.load_buffer(bytes.data(), bytes.size(), {Module::LoadMode::Mmap, 1}), Error::Ok);
    HeapWatch heap;
    Method* m = module.method("second");
    heap.stop();
    ASSERT_NE(m, nullptr) << last_error_message();
    EXPECT_EQ(heap.throwing(), 0);
    EXPECT_EQ(heap.direct_c(), 0);
    n = heap.calls();
  }
  ASSERT_GT(n, 0);
  for (long k = 0; k < n; ++k) {
    SCOPED_TRACE("heap allocation " + std::to_string(k) + " of " + std::to_string(n) + " fails");
    Module module;
    ASSERT_EQ(module.load_buffer(bytes.data(), bytes.size(), {Module::LoadMode::Mmap, 1}), Error::Ok);
    clear_last_error();
    HeapWatch heap(k);
    Method* m = module.method("second");
    EXPECT_EQ(heap.live(), 0) << "the failed method() kept heap blocks";
    heap.stop();
    EXPECT_EQ(m, nullptr);
    EXPECT_TRUE(says_out_of_memory(last_error_message())) << last_error_message();
    // the module still runs "forward", and "second" loads when memory is there
    auto fwd = module.forward({&input, 1});
    ASSERT_TRUE(fwd.ok()) << last_error_message();
    EXPECT_EQ(floats((*fwd)[0]), want);
    auto second = module.run("second", {&input, 1});
    ASSERT_TRUE(second.ok()) << last_error_message();
    EXPECT_EQ(floats((*second)[0]), want);
  }
}

// Program::load over a DataLoader whose load() fails.
class FailingLoader final : public DataLoader {
 public:
  FailingLoader(const AlignedBytes& bytes, long fail_at, Error error)
      : bytes_(bytes), fail_at_(fail_at), error_(error) {}
  size_t size() const override { return bytes_.size(); }
  Result<const uint8_t*> load(size_t offset, size_t size) override {
    if (calls_++ == fail_at_) return error_;
    if (offset > bytes_.size() || size > bytes_.size() - offset) return Error::InvalidArgument;
    return bytes_.data() + offset;
  }
  long calls() const { return calls_; }

 private:
  const AlignedBytes& bytes_;
  long fail_at_;
  Error error_;
  long calls_ = 0;
};

TEST(ProgramLoadFailure, test_each_loader_call_failing_is_that_error) {
  register_everything();
  const AlignedBytes bytes = two_methods().build();
  FailingLoader ok(bytes, -1, Error::Ok);
  HeapWatch heap;
  ASSERT_TRUE(Program::load(ok).ok()) << last_error_message();
  heap.stop();
  EXPECT_EQ(heap.calls(), 0) << "Program::load took memory from the heap";
  EXPECT_EQ(heap.direct_c(), 0) << "Program::load took memory from the heap";
  ASSERT_GT(ok.calls(), 0);
  for (Error error : {Error::AccessFailed, Error::InvalidArgument, Error::OutOfMemory}) {
    for (long k = 0; k < ok.calls(); ++k) {
      FailingLoader loader(bytes, k, error);
      Result<Program> p = Program::load(loader);
      ASSERT_FALSE(p.ok()) << "call " << k;
      EXPECT_EQ(p.error(), error) << "call " << k;
    }
  }
}

}  // namespace
}  // namespace tern
