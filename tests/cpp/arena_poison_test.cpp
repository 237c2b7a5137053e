// Planned arenas under AddressSanitizer (runtime/executor/arena_poison.h):
// while a Method lives, every arena byte that no planned tensor covers is
// poisoned, so a kernel that reads past its tensor into a gap is reported;
// destroying the Method unpoisons the arena. Only meaningful in ASan builds
// (make test-sanitize); elsewhere the tests skip.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "extension/module.h"
#include "runtime/executor/arena_poison.h"
#include "runtime/core/size_expr.h"
#include "runtime_test_util.h"

namespace tern {
namespace {

using namespace test;

// test::read_past(Tensor self) -> Tensor: out[0] = self[self.numel], the
// float just past self (a kernel with an off-by-one read). out is [1].
Error read_past_run(RunContext&, EValue* const* args) {
  const Tensor& x = args[0]->tensor;
  *args[1]->tensor.data_as<float>() = x.data_as<const float>()[x.numel];
  return Error::Ok;
}
Error read_past_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  ctx.set_run(read_past_run);
  return Error::Ok;
}

// Whether byte i of an arena is poisoned (false outside ASan builds).
bool poisoned(const uint8_t* arena, size_t i) {
#ifdef TERN_POISON_ARENAS
  return __asan_address_is_poisoned(arena + i) != 0;
#else
  (void)arena, (void)i;
  return false;
#endif
}

class ArenaPoison : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_test_kernels();
    static const OpKernel kReadPast[] = {{"test::read_past", 1, read_past_prepare}};
    static const bool registered = register_kernels({kReadPast, 1}) == Error::Ok;
    ASSERT_TRUE(registered);
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    enable_dynamic_shapes();
  }
  void SetUp() override {
#if defined(TERN_TEST_SANITIZER_BUILD)
    // A TERN_SANITIZE build that lost the poisoning fails here, not skips.
    ASSERT_TRUE(kPoisonArenas) << "built with TERN_SANITIZE, but arena_poison.h does not poison arenas";
#else
    if (!kPoisonArenas) GTEST_SKIP() << "not an AddressSanitizer build";
#endif
  }
};

// Arena of 256 bytes: x [0, 8), t [64, 80) and an alias of it [64, 88),
// y [128, 136), a state tensor [160, 168); every range a multiple of ASan's
// 8-byte granule, so poisoned bytes are exactly the uncovered ones.
ProgramBuilder gappy_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(256);
  const uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  m.planned(ScalarType::Float32, {4}, 64, arena);
  m.planned(ScalarType::Float32, {6}, 64, arena);
  const uint32_t y = m.planned(ScalarType::Float32, {2}, 128, arena);
  const uint32_t init = m.constant<float>({2}, {5, 6});
  m.state_tensor(ScalarType::Float32, {2}, 160, init, "s", arena);
  m.call("test::add_one", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

bool covered_by_gappy(size_t i) {
  return i < 8 || (i >= 64 && i < 88) || (i >= 128 && i < 136) || (i >= 160 && i < 168);
}

TEST_F(ArenaPoison, test_bytes_no_planned_tensor_covers_are_poisoned_until_the_method_is_destroyed) {
  LoadedMethod r(gappy_program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  const uint8_t* arena = r.mem.arenas[0].data();
  ASSERT_EQ(r.mem.arenas[0].size(), 256u);
  for (size_t i = 0; i < 256; ++i) EXPECT_EQ(poisoned(arena, i), !covered_by_gappy(i)) << "byte " << i;
  float x[2] = {1, 2};
  ASSERT_EQ(r.method->set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{2, 3}));
  {
    Method moved(std::move(*r.method));  // the poison moves with the method
    for (size_t i = 0; i < 256; ++i) EXPECT_EQ(poisoned(arena, i), !covered_by_gappy(i)) << "byte " << i;
  }
  for (size_t i = 0; i < 256; ++i) EXPECT_FALSE(poisoned(arena, i)) << "byte " << i << " after the method";
}

TEST_F(ArenaPoison, test_a_failed_load_leaves_nothing_poisoned) {
  ProgramBuilder pb = gappy_program();
  pb.methods()[0].call("test::reject", "", {0, 3});
  LoadedMethod r(pb);
  ASSERT_FALSE(r.method.ok());
  for (size_t i = 0; i < 256; ++i) EXPECT_FALSE(poisoned(r.mem.arenas[0].data(), i)) << "byte " << i;
}

// x [n, 2] for n in 1..8, planned at its upper bound: [0, 64); y [1] bool at 64.
TEST_F(ArenaPoison, test_a_dynamic_tensor_keeps_its_upper_bound_unpoisoned) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128);
  m.symbols = {{"n", 1, 8}};
  const int32_t n = m.size_expr({static_cast<int64_t>(ExprOp::Symbol), 0});
  const uint32_t x = m.planned(ScalarType::Float32, {8, 2}, 0, arena);
  m.values[x].dyn_sizes = {n, -1};
  const uint32_t y = m.planned(ScalarType::Bool, {1}, 64, arena);
  m.call("test::positive", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  std::vector<float> data = {1, 2};
  ASSERT_EQ(r.method->set_input(0, make_tensor(data.data(), ScalarType::Float32, {1, 2})), Error::Ok)
      << last_error_message();
  ASSERT_EQ(r.method->execute(), Error::Ok);
  const uint8_t* a = r.mem.arenas[0].data();
  for (size_t i = 0; i < 64; ++i) EXPECT_FALSE(poisoned(a, i)) << "byte " << i << " of x's planned bytes";
  EXPECT_FALSE(poisoned(a, 64));
  for (size_t i = 72; i < 128; ++i) EXPECT_TRUE(poisoned(a, i)) << "byte " << i;
}

// x [2] at 0 and out [1] at 64: the float past x is in the gap [8, 64).
ProgramBuilder read_past_program(bool neighbour) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128);
  const uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  if (neighbour) m.planned(ScalarType::Float32, {2}, 8, arena);  // the float past x is this one's
  const uint32_t y = m.planned(ScalarType::Float32, {1}, 64, arena);
  m.call("test::read_past", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

TEST_F(ArenaPoison, test_a_kernel_reading_past_its_tensor_into_a_gap_is_reported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        LoadedMethod r(read_past_program(false));
        if (r.method.ok()) (void)r.method->execute();
      },
      "use-after-poison");
}

// The control: the same read lands in another planned tensor, which is
// addressable, and the method runs.
TEST_F(ArenaPoison, test_a_kernel_reading_into_a_planned_neighbour_is_not_reported) {
  LoadedMethod r(read_past_program(true));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  EXPECT_EQ(r.method->execute(), Error::Ok);
}

}  // namespace
}  // namespace tern
