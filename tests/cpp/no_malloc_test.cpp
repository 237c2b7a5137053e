// Proves the runtime rule "no heap after load": Method::execute() never
// allocates. This binary replaces the global operator new/delete and
// interposes malloc, calloc, realloc, free, aligned_alloc, posix_memalign and
// memalign (forwarding to glibc's __libc_* entry points), counting every call
// made while counting is on. Under ASan or other sanitizers, which own the
// allocator, it installs the sanitizer's allocation hooks instead.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "extension/npy.h"
#include "kernels/portable/register.h"
#include "heap_hooks.h"
#include "runtime_test_util.h"
#include "test_backend.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<size_t> g_allocations{0};

inline void count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}

// Counts the allocations made while it is alive.
class AllocationCounter {
 public:
  AllocationCounter() {
    g_allocations = 0;
    g_counting = true;
  }
  ~AllocationCounter() { g_counting = false; }
  size_t stop() {
    g_counting = false;
    return g_allocations;
  }
};

}  // namespace

namespace tern {
namespace test {
void on_c_allocation() { count(); }
}  // namespace test
}  // namespace tern

#if !defined(TERN_TEST_SANITIZER)  // a sanitizer's hook sees operator new's mallocs

// operator new/delete: counted here too, in case the C++ runtime's versions
// do not go through the interposed malloc.
void* operator new(size_t n) {
  count();
  void* p = tern::test::raw_malloc(n ? n : 1);
  if (p == nullptr) abort();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  count();
  return tern::test::raw_malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(size_t n, std::align_val_t a) {
  count();
  void* p = tern::test::raw_memalign(static_cast<size_t>(a), n ? n : 1);
  if (p == nullptr) abort();
  return p;
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { tern::test::raw_free(p); }
void operator delete[](void* p) noexcept { tern::test::raw_free(p); }
void operator delete(void* p, size_t) noexcept { tern::test::raw_free(p); }
void operator delete[](void* p, size_t) noexcept { tern::test::raw_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { tern::test::raw_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { tern::test::raw_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { tern::test::raw_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { tern::test::raw_free(p); }

#endif

namespace tern {
namespace {

using namespace test;

// Defeats the optimizer: a pointer it must assume escapes.
void* volatile g_sink;

TEST(NoMalloc, test_counter_counts_malloc_new_and_friends) {
  // The proof below is only as good as the counter: it must see each kind.
  {
    AllocationCounter c;
    g_sink = malloc(24);
    free(g_sink);
    EXPECT_EQ(c.stop(), 1u) << "malloc";
  }
  {
    AllocationCounter c;
    int* p = new int(3);
    g_sink = p;
    delete p;
    EXPECT_EQ(c.stop(), 1u) << "operator new";
  }
  {
    AllocationCounter c;
    g_sink = calloc(3, 8);
    g_sink = realloc(g_sink, 100);
    free(g_sink);
    g_sink = aligned_alloc(64, 128);
    free(g_sink);
    EXPECT_EQ(c.stop(), 3u) << "calloc, realloc, aligned_alloc";
  }
  {
    AllocationCounter c;
    std::vector<int> v(10);
    g_sink = v.data();
    EXPECT_GE(c.stop(), 1u) << "std::vector";
  }
  {
    AllocationCounter c;
    EXPECT_EQ(c.stop(), 0u) << "nothing allocated";
  }
}

// Every instruction kind: relu and test kernels (a scalar argument, a list
// argument, scratch), a jump on a computed bool, a move, a free.
//   a = relu(x); b = a + 1; a = b * 0.5; y = a + b + c
//   if x[0] > 0: b = 2 * y; y = b    else: y = b
ProgramBuilder busy_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(512);
  uint32_t x = m.planned(ScalarType::Float32, {4, 4}, 0, arena);
  uint32_t a = m.planned(ScalarType::Float32, {4, 4}, 64, arena);
  uint32_t b = m.planned(ScalarType::Float32, {4, 4}, 128, arena);
  uint32_t y = m.planned(ScalarType::Float32, {4, 4}, 192, arena);
  uint32_t cond = m.planned(ScalarType::Bool, {1}, 256, arena);
  std::vector<float> w(16, 0.5f);
  uint32_t c = m.constant<float>({4, 4}, w);
  m.call("aten::relu", "", {x, a});
  m.call("test::add_one", "", {a, b});
  m.call("test::scale", "", {b, m.double_value(0.5), a});
  m.call("test::sum_list", "", {m.tensor_list({a, b, c}), y});
  m.call("test::positive", "", {x, cond});  // x[0] > 0
  m.jump_false(cond, 7);
  m.call("test::scratch_double", "", {y, b});
  m.move(b, y);
  m.free_value(a);
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

TEST(NoMalloc, test_execute_never_allocates) {
  register_test_kernels();
  register_relu();
  LoadedProgram lp(busy_program().build());
  ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
  MethodMemory mem(*lp.program, "forward");
  Result<Method> method = Method::load(*lp.program, "forward", mem.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i % 5) - 2.f;
  ASSERT_EQ(method->set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok);  // warm up (first-touch, lazy binding)

  size_t allocations;
  Error first_error = Error::Ok;
  {
    AllocationCounter c;
    for (int i = 0; i < 100; ++i) {
      x[0] = static_cast<float>(i % 2 ? i : -i);  // take both sides of the jump
      Error e = method->set_input(0, x, sizeof(x));
      if (e == Error::Ok) e = method->execute();
      if (e != Error::Ok && first_error == Error::Ok) first_error = e;
    }
    allocations = c.stop();
  }
  EXPECT_EQ(first_error, Error::Ok);
  EXPECT_EQ(allocations, 0u) << "set_input + execute() allocated";
  // The result is still right: y = 2 * (a + b + c) with a = (relu(x) + 1) / 2.
  const float* y = method->output(0).data_as<float>();
  float r = x[1] > 0 ? x[1] : 0;
  float b = r + 1, a = b * 0.5f;
  EXPECT_FLOAT_EQ(y[1], 2 * (a + b + 0.5f));
}

// A backend call (format 1.1) split over 2 threads: relu on the tern_test
// backend (test_backend.h), 4096 elements.
TEST(NoMalloc, test_backend_call_on_two_threads_never_allocates) {
  register_test_backend();
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(2 * 4096 * 4);
  uint32_t x = m.planned(ScalarType::Float32, {4096}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {4096}, 4096 * 4, arena);
  std::vector<uint8_t> payload = {'T', 'T', 'B', '1'};
  const uint32_t counts[] = {1, 0, 0, 1, 1}, op[] = {3, 1, 0, 0};
  const int64_t numel = 4096;
  payload.insert(payload.end(), reinterpret_cast<const uint8_t*>(counts), reinterpret_cast<const uint8_t*>(counts) + 20);
  payload.insert(payload.end(), reinterpret_cast<const uint8_t*>(&numel), reinterpret_cast<const uint8_t*>(&numel) + 8);
  payload.insert(payload.end(), reinterpret_cast<const uint8_t*>(op), reinterpret_cast<const uint8_t*>(op) + 16);
  m.backend_call("tern_test", payload, {x}, {y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
  MethodMemory mem(*lp.program, "forward");
  Result<Method> method = Method::load(*lp.program, "forward", mem.manager, {2});
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> in(4096);
  for (int i = 0; i < 4096; ++i) in[i] = float(i % 7) - 3.f;
  ASSERT_EQ(method->set_input(0, in.data(), in.size() * 4), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok);  // warm up
  size_t allocations;
  bool all_ok = true;
  {
    AllocationCounter c;
    for (int i = 0; i < 50; ++i) all_ok = method->execute() == Error::Ok && all_ok;
    allocations = c.stop();
  }
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(method->output(0).data_as<float>()[4095], std::max(in[4095], 0.f));
}

// test::allocates(Tensor self) -> Tensor: a kernel that breaks the rule, to
// show that the counter sees an allocation made inside execute().
Error allocates_run(RunContext&, EValue* const* args) {
  g_sink = malloc(16);
  free(g_sink);
  memcpy(args[1]->tensor.data, args[0]->tensor.data, args[0]->tensor.nbytes());
  return Error::Ok;
}
Error allocates_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(test_kernels::expect_float_unary(ctx, args));
  ctx.set_run(allocates_run);
  return Error::Ok;
}

TEST(NoMalloc, test_counter_sees_an_allocating_kernel_inside_execute) {
  static const OpKernel kAllocates[] = {{"test::allocates", 1, allocates_prepare}};
  ASSERT_EQ(register_kernels({kAllocates, 1}), Error::Ok);
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  m.call("test::allocates", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  Result<Method> method = Method::load(*lp.program, "forward", mem.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  size_t allocations;
  {
    AllocationCounter c;
    for (int i = 0; i < 5; ++i) (void)method->execute();
    allocations = c.stop();
  }
  EXPECT_EQ(allocations, 5u);
}

TEST(NoMalloc, test_execute_error_path_does_not_allocate) {
  // A failing kernel logs an error line; logging must not allocate either.
  register_test_kernels();
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  m.call("test::fail_if_negative", "", {x, y});
  m.debug = {{"check", "model.py:1"}};
  m.inputs = {x};
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  Result<Method> method = Method::load(*lp.program, "forward", mem.manager);
  ASSERT_TRUE(method.ok());
  float bad[2] = {-1, 1};
  ASSERT_EQ(method->set_input(0, bad, sizeof(bad)), Error::Ok);
  set_log_level(LogLevel::Fatal);  // keep stderr quiet; the message is still formatted
  ASSERT_EQ(method->execute(), Error::ExecutionFailed);  // warm up
  size_t allocations;
  {
    AllocationCounter c;
    for (int i = 0; i < 10; ++i) (void)method->execute();
    allocations = c.stop();
  }
  set_log_level(LogLevel::Info);
  EXPECT_EQ(allocations, 0u);
}

// The same rule on real exported models, Module::forward (the
// application's path), with one thread or several (the pool's workers
// started at load): kitchen_sink uses most portable kernels (convolution
// with scratch, pooling, norms, embedding, softmax, where...), cpu_block
// runs on the cpu backend (fused convolutions, depthwise, pools, linear),
// state keeps buffers between calls (format 1.2: moves into state, reset),
// control_flow runs a loop and branches (jumps back and forth).
class NoMallocModels : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(NoMallocModels, test_module_forward_on_exported_model_never_allocates) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cpu_backend(), Error::Ok);
  const std::string stem = std::string(TERN_TEST_DATA_DIR) + "/" + std::get<0>(GetParam());
  const int threads = std::get<1>(GetParam());
  Module module;
  ASSERT_EQ(module.load((stem + ".tern").c_str(), Module::Options{Module::LoadMode::Mmap, threads}), Error::Ok)
      << last_error_message();
  ASSERT_EQ(module.method()->threads(), threads);
  std::vector<NpyArray> arrays;
  for (int i = 0;; ++i) {
    NpyArray a;
    if (read_npy((stem + ".input" + std::to_string(i) + ".npy").c_str(), &a) != Error::Ok) break;
    arrays.push_back(std::move(a));
  }
  ASSERT_FALSE(arrays.empty());
  std::vector<Tensor> inputs;
  for (NpyArray& a : arrays) inputs.push_back(a.tensor());
  ASSERT_TRUE(module.forward({inputs.data(), inputs.size()}).ok()) << last_error_message();  // warm up

  size_t allocations;
  bool all_ok = true;
  {
    AllocationCounter c;
    for (int i = 0; i < 20; ++i) {
      if (i % 2 == 0) module.method()->reset_state();  // state (v1_2/state): keeps its step counter in range
      all_ok = module.forward({inputs.data(), inputs.size()}).ok() && all_ok;
    }
    allocations = c.stop();
  }
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(allocations, 0u) << "Module::forward allocated";
}

// Dynamic shapes (format 1.3): a new input shape makes execute() compute
// every size and prepare the affected kernels again, and reshape the
// affected delegates; that allocates nothing either (v1_3/dynamic: portable
// kernels, batch 1..6, recorded at 4; v1_3/cpu_dynamic: two cpu backend
// delegates of dynamic sizes, batch 1..4, recorded at 3; batches up to the
// recorded one, the smaller ones the first rows of the same buffers).
class NoMallocDynamic : public ::testing::TestWithParam<const char*> {};

TEST_P(NoMallocDynamic, test_execute_with_changing_input_shapes_never_allocates) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cpu_backend(), Error::Ok);
  const std::string stem = std::string(TERN_TEST_DATA_DIR) + "/" + GetParam();
  Module module;
  ASSERT_EQ(module.load((stem + ".tern").c_str(), Module::Options{Module::LoadMode::Mmap, 2}), Error::Ok)
      << last_error_message();
  NpyArray arrays[2];
  for (int i = 0; i < 2; ++i) ASSERT_EQ(read_npy((stem + ".input" + std::to_string(i) + ".npy").c_str(), &arrays[i]), Error::Ok);
  Tensor inputs[2] = {arrays[0].tensor(), arrays[1].tensor()};
  const int64_t recorded = inputs[0].sizes[0];  // batches up to it read rows the arrays hold
  ASSERT_GE(recorded, 3);
  auto with_batch = [&](int64_t b) {
    for (Tensor& t : inputs) {
      t.numel = t.numel / t.sizes[0] * b;
      t.sizes[0] = b;
    }
  };
  ASSERT_TRUE(module.forward({inputs, 2}).ok()) << last_error_message();  // warm up
  size_t allocations;
  bool all_ok = true;
  int64_t last_rows = 0;
  {
    AllocationCounter c;
    for (int64_t b : {int64_t(1), recorded, int64_t(2), recorded - 1, recorded, int64_t(1)}) {
      with_batch(b);
      auto outs = module.forward({inputs, 2});
      all_ok = outs.ok() && all_ok;
      if (outs.ok()) last_rows = (*outs)[0].sizes[0];
    }
    allocations = c.stop();
  }
  EXPECT_TRUE(all_ok) << last_error_message();
  EXPECT_EQ(last_rows, 1);
  EXPECT_EQ(allocations, 0u) << "Module::forward with new input shapes allocated";
}

INSTANTIATE_TEST_SUITE_P(Files, NoMallocDynamic, ::testing::Values("v1_3/dynamic", "v1_3/cpu_dynamic"));

INSTANTIATE_TEST_SUITE_P(Models, NoMallocModels,
                         ::testing::Combine(::testing::Values("v1/kitchen_sink", "v1_1/cpu_block", "v1_2/state",
                                                              "v1_2/control_flow"),
                                            ::testing::Values(1, 2, 3)));

}  // namespace
}  // namespace tern
