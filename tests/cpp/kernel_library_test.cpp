// Layered kernel libraries (runtime/kernel/registry.h) as Method::load uses
// them, persistent per-instruction memory (PrepareContext::allocate) and
// per-thread scratch. Each test registers its own uniquely named libraries
// (the registry is process-wide and append-only).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>

#include "kernel_test_util.h"
#include "runtime_test_util.h"

namespace tern {
namespace {

using namespace test;
using test::KernelHarness;

// A "fast" relu for float32 only: writes 42 (so the test sees which kernel ran).
Error fast_relu_run(RunContext&, EValue* const* args) {
  Tensor& y = args[1]->tensor;
  for (int64_t i = 0; i < y.numel; ++i) y.data_as<float>()[i] = 42.f;
  return Error::Ok;
}
Error fast_relu_prepare(PrepareContext& ctx, Span<EValue* const>) {
  ctx.set_run(fast_relu_run);
  return Error::Ok;
}
// Declines every call: the portable kernel must take over.
Error declining_prepare(PrepareContext& ctx, Span<EValue* const>) {
  return ctx.fail(Error::OperatorMissing, "only 3-d inputs, got another rank");
}
// Fails with a hard error: no other library is tried.
Error broken_prepare(PrepareContext& ctx, Span<EValue* const>) {
  return ctx.fail(Error::InvalidProgram, "argument 0 is malformed in a way only I check");
}

const OpKernel kFast[] = {
    {"aten::relu", 1, fast_relu_prepare, dtype_bit(ScalarType::Float32)},
    {"aten::neg", 1, declining_prepare},
    {"test::declines_everywhere", 1, declining_prepare},
    {"test::floating_only", 1, fast_relu_prepare, dtype_set("floating")},
};
const OpKernel kSlow[] = {
    {"test::declines_everywhere", 1, declining_prepare},
    {"aten::abs", 1, broken_prepare},
};

class KernelLibraries : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_kernel_library({"fast", 10, kFast}), Error::Ok);
    ASSERT_EQ(register_kernel_library({"slow", 5, kSlow}), Error::Ok);
  }
};

// x [4] (dtype) -> op -> y [4].
ProgramBuilder unary_program(const char* op, ScalarType dtype) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(128);
  uint32_t x = m.planned(dtype, {4}, 0, arena);
  uint32_t y = m.planned(dtype, {4}, 64, arena);
  m.call(op, "", {x, y});
  m.debug = {{"my_node", "model.py:3 in forward: f(x)"}};
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

TEST_F(KernelLibraries, test_libraries_are_listed_most_preferred_first) {
  Span<const KernelLibrary> libs = kernel_libraries();
  ASSERT_GE(libs.size(), 3u);
  for (size_t i = 1; i < libs.size(); ++i) EXPECT_GE(libs[i - 1].priority, libs[i].priority);
  EXPECT_STREQ(libs[libs.size() - 1].name, "portable");
  const OpKernel* found[kMaxKernelCandidates];
  ASSERT_EQ(find_kernels("test::declines_everywhere", "", nullptr, found, kMaxKernelCandidates), 2u);
  EXPECT_STREQ(library_of(*found[0])->name, "fast");
  EXPECT_STREQ(library_of(*found[1])->name, "slow");
}

TEST_F(KernelLibraries, test_registering_a_taken_name_or_a_duplicate_op_fails) {
  EXPECT_EQ(register_kernel_library({"portable", 3, kSlow}), Error::InvalidArgument);
  const OpKernel twice[] = {{"aten::relu", 1, fast_relu_prepare}, {"aten::relu", 1, fast_relu_prepare}};
  EXPECT_EQ(register_kernel_library({"twice", 3, twice}), Error::InvalidArgument);
  EXPECT_EQ(find_kernel_library("twice"), nullptr);
}

TEST_F(KernelLibraries, test_preferred_library_runs_the_instruction) {
  LoadedMethod r(unary_program("aten::relu", ScalarType::Float32));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float x[4] = {-1, 2, -3, 4};
  ASSERT_EQ(r.method->set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(r.method->output(0).data_as<float>()[0], 42.f);
}

TEST_F(KernelLibraries, test_kernel_for_another_dtype_is_skipped) {
  // fast's relu is float32-only: an int64 relu goes to the portable one.
  LoadedMethod r(unary_program("aten::relu", ScalarType::Int64));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  int64_t x[4] = {-1, 2, -3, 4};
  ASSERT_EQ(r.method->set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  const int64_t* y = r.method->output(0).data_as<int64_t>();
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 2);
}

// ops.def's dtype lists (kernels/portable/ops.def) are parsed at compile time.
static_assert(dtype_set("float32") == dtype_bit(ScalarType::Float32), "one name");
static_assert(dtype_set("floating  bool") ==
                  (dtype_bit(ScalarType::Float32) | dtype_bit(ScalarType::Float64) | dtype_bit(ScalarType::Bool)),
              "a group, extra spaces");
static_assert(dtype_set("integral") == (dtype_bit(ScalarType::Int8) | dtype_bit(ScalarType::UInt8) |
                                        dtype_bit(ScalarType::Int16) | dtype_bit(ScalarType::Int32) |
                                        dtype_bit(ScalarType::Int64)),
              "the integer group");
static_assert(dtype_set("any") == kAnyDtype, "any");
static_assert(dtype_set("float") == kDtypeSetInvalid && dtype_set("") == kDtypeSetInvalid &&
                  dtype_set("any int8") == kDtypeSetInvalid && dtype_set("int64x") == kDtypeSetInvalid,
              "unknown words, empty lists and any with others are invalid");

TEST_F(KernelLibraries, test_a_dtype_no_kernel_takes_is_refused_naming_it_and_the_dtypes_taken) {
  clear_last_error();
  LoadedMethod r(unary_program("test::floating_only", ScalarType::Int32));
  EXPECT_EQ(r.method.error(), Error::OperatorMissing);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("int32 is not supported (it takes float32, float64)"), std::string::npos) << msg;
  LoadedMethod ok(unary_program("test::floating_only", ScalarType::Float64));
  EXPECT_TRUE(ok.method.ok()) << last_error_message();
}

TEST_F(KernelLibraries, test_declining_kernel_passes_the_instruction_on) {
  LoadedMethod r(unary_program("aten::neg", ScalarType::Float32));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float x[4] = {-1, 2, -3, 4};
  ASSERT_EQ(r.method->set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(r.method->output(0).data_as<float>()[1], -2.f);
}

TEST_F(KernelLibraries, test_when_every_library_declines_the_error_gives_each_reason_once) {
  clear_last_error();
  LoadedMethod r(unary_program("test::declines_everywhere", ScalarType::Float32));
  EXPECT_EQ(r.method.error(), Error::OperatorMissing);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("instruction 0 (test::declines_everywhere, node my_node)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fast: only 3-d inputs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("slow: only 3-d inputs"), std::string::npos) << msg;
}

TEST_F(KernelLibraries, test_hard_error_of_a_preferred_kernel_fails_the_load) {
  clear_last_error();
  LoadedMethod r(unary_program("aten::abs", ScalarType::Float32));
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("(aten::abs, node my_node): argument 0 is malformed"), std::string::npos) << msg;
}

// The kernel tests' harness picks the library named by
// TERN_TEST_KERNEL_LIBRARY, falling back to portable for ops it lacks.
TEST_F(KernelLibraries, test_kernel_tests_run_against_the_library_named_in_the_environment) {
  setenv("TERN_TEST_KERNEL_LIBRARY", "fast", 1);
  EXPECT_EQ(KernelHarness::kernel("aten::relu"), &kFast[0]);
  const OpKernel* sigmoid = KernelHarness::kernel("aten::sigmoid");
  ASSERT_NE(sigmoid, nullptr);
  EXPECT_STREQ(library_of(*sigmoid)->name, "portable");
  KernelHarness h;
  EValue* x = h.tensor<float>({3}, {-1, 0, 2});
  EValue* y = h.empty<float>({3});
  ASSERT_EQ(h.call("aten::relu", {x, y}), Error::Ok);
  EXPECT_EQ(h.values<float>(y), (std::vector<float>{42, 42, 42}));  // fast's relu ran
  unsetenv("TERN_TEST_KERNEL_LIBRARY");
  EXPECT_STREQ(library_of(*KernelHarness::kernel("aten::relu"))->name, "portable");
}

// ------------------------------------------------------ persistent memory

// test::table(Tensor self) -> Tensor: prepare builds a 1000-float table in
// persistent memory (its pointer in the inline state); run reads it.
Error table_run(RunContext& ctx, EValue* const* args) {
  const float* table;
  memcpy(&table, ctx.state(), sizeof(table));
  Tensor& y = args[1]->tensor;
  for (int64_t i = 0; i < y.numel; ++i) y.data_as<float>()[i] = table[999 - i];
  return Error::Ok;
}
Error table_prepare(PrepareContext& ctx, Span<EValue* const>) {
  float* table = static_cast<float*>(ctx.allocate(1000 * sizeof(float)));
  if (table == nullptr) return Error::OutOfMemory;
  if (reinterpret_cast<uintptr_t>(table) % 64 != 0) return ctx.fail(Error::InvalidProgram, "misaligned");
  for (int i = 0; i < 1000; ++i) table[i] = float(i);
  memcpy(ctx.state(), &table, sizeof(table));
  ctx.set_run(table_run);
  return Error::Ok;
}

// test::per_thread(Tensor self) -> Tensor: each thread index writes its index
// into its own scratch, then out[t] = what thread t's scratch holds.
Error per_thread_run(RunContext& ctx, EValue* const* args) {
  float* y = args[1]->tensor.data_as<float>();
  std::atomic<int> bodies{0};
  ctx.parallel([&](RunContext& c) {
    int* mine = static_cast<int*>(c.scratch());
    for (int i = 0; i < 256; ++i) mine[i] = c.thread_index();
    bodies++;
  });
  const uint8_t* base = static_cast<const uint8_t*>(ctx.scratch());
  for (int t = 0; t < 4; ++t) {
    y[t] = t < ctx.thread_count() ? float(reinterpret_cast<const int*>(base + t * 1024)[255]) : -1.f;
  }
  return bodies.load() == ctx.thread_count() ? Error::Ok : Error::ExecutionFailed;
}
Error per_thread_prepare(PrepareContext& ctx, Span<EValue* const>) {
  ctx.request_scratch(1024);
  ctx.set_run(per_thread_run);
  return Error::Ok;
}

const OpKernel kMemoryKernels[] = {
    {"test::table", 1, table_prepare},
    {"test::per_thread", 1, per_thread_prepare},
};

class KernelMemory : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(register_kernel_library({"memory_test", 1, kMemoryKernels}), Error::Ok); }
};

TEST_F(KernelMemory, test_persistent_memory_lives_as_long_as_the_method) {
  LoadedMethod r(unary_program("test::table", ScalarType::Float32));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  EXPECT_GE(r.method->persistent_bytes(), 4000u);
  EXPECT_GE(r.method->metadata_bytes(), 4000u);
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(r.method->execute(), Error::Ok);
    const float* y = r.method->output(0).data_as<float>();
    EXPECT_EQ(y[0], 999.f);
    EXPECT_EQ(y[3], 996.f);
  }
}

TEST_F(KernelMemory, test_persistent_memory_beyond_the_allocator_is_out_of_memory) {
  clear_last_error();
  LoadedMethod r(unary_program("test::table", ScalarType::Float32), /*method_bytes=*/2048);
  EXPECT_EQ(r.method.error(), Error::OutOfMemory);
  EXPECT_NE(std::string(last_error_message()).find("4000 persistent bytes"), std::string::npos)
      << last_error_message();
}

TEST_F(KernelMemory, test_each_thread_gets_its_own_scratch_block) {
  for (int threads : {1, 2, 3}) {
    ProgramBuilder pb = unary_program("test::per_thread", ScalarType::Float32);
    LoadedProgram lp(pb.build());
    ASSERT_EQ(lp.error, Error::Ok);
    MethodMemory mem(*lp.program, "forward");
    Result<Method> m = Method::load(*lp.program, "forward", mem.manager, {threads});
    ASSERT_TRUE(m.ok()) << last_error_message();
    EXPECT_EQ(m->threads(), threads);
    EXPECT_EQ(m->scratch_bytes(), 1024u);
    ASSERT_EQ(m->execute(), Error::Ok);
    const float* y = m->output(0).data_as<float>();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(y[t], t < threads ? float(t) : -1.f) << threads << " threads";
  }
}

TEST_F(KernelMemory, test_thread_count_out_of_range_is_invalid_argument) {
  ProgramBuilder pb = unary_program("test::per_thread", ScalarType::Float32);
  LoadedProgram lp(pb.build());
  MethodMemory mem(*lp.program, "forward");
  EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager, {0}).error(), Error::InvalidArgument);
  EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager, {ThreadPool::kMaxThreads + 1}).error(),
            Error::InvalidArgument);
}

}  // namespace
}  // namespace tern
