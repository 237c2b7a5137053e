// Method::load (runtime/executor/method.cpp): binding a verified program to
// kernels and memory, and each way it refuses to. Kernels: the test:: kernels
// of runtime_test_util.h and the portable aten::relu.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime_test_util.h"

namespace tern {
namespace {

using namespace test;

class MethodLoad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_test_kernels();
    register_relu();
  }
};

TEST_F(MethodLoad, test_missing_method_is_not_found) {
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  EXPECT_EQ(Method::load(*lp.program, "backward", mem.manager).error(), Error::NotFound);
  EXPECT_EQ(Method::load(*lp.program, "", mem.manager).error(), Error::NotFound);
}

TEST_F(MethodLoad, test_second_method_by_name) {
  ProgramBuilder pb = chain_program();
  MethodBuilder& m = pb.method("double_it");
  uint32_t arena = m.arena(32);
  uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {1}, 16, arena);
  m.call("test::scale", "", {x, m.int_value(2), y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  EXPECT_EQ(lp.program->num_methods(), 2u);
  MethodMemory mem(*lp.program, "double_it");
  Result<Method> method = Method::load(*lp.program, "double_it", mem.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  float in = 21;
  ASSERT_EQ(method->set_input(0, &in, 4), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(method->output(0).data_as<float>()[0], 42);
}

TEST_F(MethodLoad, test_unknown_operator_is_operator_missing) {
  ProgramBuilder pb = chain_program();
  pb.methods()[0].operators[0].name = "test::no_such_op";
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::OperatorMissing);
  EXPECT_NE(std::string(last_error_message()).find("test::no_such_op"), std::string::npos);
}

TEST_F(MethodLoad, test_unknown_overload_is_operator_missing) {
  ProgramBuilder pb = chain_program();
  pb.methods()[0].operators[0].overload = "Tensor";  // only test::add_one exists
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::OperatorMissing);
}

TEST_F(MethodLoad, test_arena_too_small_is_memory_too_small) {
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  mem.spans[0] = Span<uint8_t>(mem.arenas[0].data(), 191);
  EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager).error(), Error::MemoryTooSmall);
}

TEST_F(MethodLoad, test_misaligned_arena_is_memory_too_small) {
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  AlignedBytes bigger(256);
  mem.spans[0] = Span<uint8_t>(bigger.data() + 16, 240);
  EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager).error(), Error::MemoryTooSmall);
}

TEST_F(MethodLoad, test_missing_arena_is_memory_too_small) {
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  mem.manager.planned = Span<const Span<uint8_t>>();
  EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager).error(), Error::MemoryTooSmall);
}

TEST_F(MethodLoad, test_without_method_allocator_is_invalid_argument) {
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  mem.manager.method_allocator = nullptr;
  EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager).error(), Error::InvalidArgument);
}

TEST_F(MethodLoad, test_method_allocator_too_small_is_out_of_memory) {
  ProgramBuilder pb = chain_program();
  // Add a kernel with scratch, lists and constants so every allocation kind is
  // on the path.
  MethodBuilder& m = pb.methods()[0];
  uint32_t c = m.constant<float>({2, 2}, {1, 1, 1, 1});
  uint32_t s = m.planned(ScalarType::Float32, {2, 2}, 64, 0);
  m.call("test::sum_list", "", {m.tensor_list({c, c}), s});
  m.call("test::scratch_double", "", {s, s});
  m.debug.clear();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  size_t needed;
  {
    MethodMemory mem(*lp.program, "forward");
    Result<Method> method = Method::load(*lp.program, "forward", mem.manager);
    ASSERT_TRUE(method.ok()) << last_error_message();
    needed = mem.allocator.used();
    EXPECT_EQ(method->metadata_bytes(), needed);
  }
  for (size_t bytes = 0; bytes < needed; ++bytes) {
    MethodMemory mem(*lp.program, "forward", bytes);
    EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager).error(), Error::OutOfMemory) << bytes;
  }
  MethodMemory mem(*lp.program, "forward", needed);
  EXPECT_TRUE(Method::load(*lp.program, "forward", mem.manager).ok());
}

// A bump allocator over a buffer full of 0xAB that remembers its blocks.
class RecordingAllocator final : public MemoryAllocator {
 public:
  explicit RecordingAllocator(size_t bytes)
      : MemoryAllocator(nullptr, 0), pool_(bytes), inner_(pool_.data(), bytes) {
    memset(pool_.data(), 0xAB, bytes);
  }
  void* allocate(size_t size, size_t alignment) override {
    void* p = inner_.allocate(size, alignment);
    if (p != nullptr) blocks.push_back({static_cast<uint8_t*>(p), size});
    return p;
  }
  size_t used() const override { return inner_.used(); }
  size_t capacity() const override { return inner_.capacity(); }
  std::vector<Span<uint8_t>> blocks;

 private:
  AlignedBytes pool_;
  MemoryAllocator inner_;
};

TEST_F(MethodLoad, test_load_zeroes_the_scratch_so_its_pages_are_resident_before_the_first_run) {
  ProgramBuilder pb = chain_program();
  MethodBuilder& m = pb.methods()[0];
  uint32_t s = m.planned(ScalarType::Float32, {2, 2}, 64, 0);
  m.call("test::scratch_double", "", {s, s});
  m.debug.clear();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  RecordingAllocator allocator(64 * 1024);
  mem.manager.method_allocator = &allocator;
  Result<Method> method = Method::load(*lp.program, "forward", mem.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  const size_t scratch = (test_kernels::kScratchRequest + 63) / 64 * 64;  // one thread's block
  ASSERT_EQ(method->scratch_bytes(), test_kernels::kScratchRequest);
  int found = 0;
  for (const Span<uint8_t>& b : allocator.blocks) {
    if (b.size() != scratch) continue;
    ++found;
    for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], 0) << "scratch byte " << i << " not written at load";
  }
  EXPECT_EQ(found, 1) << "one block of the scratch's size";
}

TEST_F(MethodLoad, test_constant_out_argument_is_invalid_program) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t c = m.constant<float>({2}, {1, 2});
  m.call("test::add_one", "", {x, c});  // would write into the file
  m.inputs = {x};
  m.outputs = {c};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("out argument"), std::string::npos);
}

TEST_F(MethodLoad, test_constant_second_out_is_invalid_program) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  uint32_t c = m.constant<float>({2}, {1, 2});
  m.call("test::split_sign", "", {x, y, c});
  m.inputs = {x};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
}

TEST_F(MethodLoad, test_non_tensor_out_argument_is_invalid_program) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  m.call("test::add_one", "", {x, m.int_value(3)});
  m.inputs = {x};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
}

TEST_F(MethodLoad, test_fewer_arguments_than_outs_is_invalid_program) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  m.call("test::split_sign", "", {x});
  m.call("test::add_one", "", {});
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
}

TEST_F(MethodLoad, test_constant_input_is_invalid_program) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  m.arena(64);
  uint32_t c = m.constant<float>({2}, {1, 2});
  m.inputs = {c};  // set_input would write into the file
  m.outputs = {c};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
}

TEST_F(MethodLoad, test_kernel_prepare_error_is_returned) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  m.call("test::reject", "", {x, y});
  m.inputs = {x};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::NotSupported);
}

TEST_F(MethodLoad, test_kernel_rejects_mismatched_shapes) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {3}, 16, arena);
  m.call("aten::relu", "", {x, y});
  m.inputs = {x};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
}

TEST_F(MethodLoad, test_move_between_different_shapes_is_invalid_program) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {4}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2, 2}, 16, arena);
  m.move(x, y);
  m.inputs = {x};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
}

TEST_F(MethodLoad, test_move_into_a_constant_or_other_kind_is_invalid_program) {
  {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t arena = m.arena(64);
    uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
    uint32_t c = m.constant<float>({2}, {1, 2});
    m.move(x, c);
    m.inputs = {x};
    LoadedMethod r(pb);
    EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  }
  {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t arena = m.arena(64);
    uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
    m.move(x, m.int_value(1));
    LoadedMethod r(pb);
    EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  }
  {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    m.move(m.int_value(1), m.double_value(1));
    LoadedMethod r(pb);
    EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  }
}

TEST_F(MethodLoad, test_jump_on_a_non_bool_is_invalid_program) {
  for (int kind = 0; kind < 3; ++kind) {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t arena = m.arena(64);
    uint32_t cond = kind == 0   ? m.int_value(0)
                    : kind == 1 ? m.planned(ScalarType::Float32, {1}, 0, arena)
                                : m.planned(ScalarType::Bool, {2}, 0, arena);
    m.jump_false(cond, 1);
    LoadedMethod r(pb);
    EXPECT_EQ(r.method.error(), Error::InvalidProgram) << kind;
  }
}

}  // namespace
}  // namespace tern
