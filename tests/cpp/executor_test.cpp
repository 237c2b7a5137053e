// Method::execute (runtime/executor/method.cpp) on small hand-built programs:
// chained kernels through planned memory, moves, jumps, failures, inputs and
// outputs. The kernels are the test:: kernels of runtime_test_util.h and the
// portable aten::relu, so these tests do not depend on the other kernels.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime_test_util.h"

namespace tern {
namespace {

using namespace test;

class Executor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_test_kernels();
    register_relu();
  }
};

TEST_F(Executor, test_two_chained_instructions_through_planned_memory) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  Method& m = *r.method;
  EXPECT_EQ(m.num_inputs(), 1u);
  EXPECT_EQ(m.num_outputs(), 1u);
  EXPECT_EQ(m.num_instructions(), 2u);
  EXPECT_STREQ(m.name(), "forward");
  float x[4] = {1, 2, 3, -4};
  ASSERT_EQ(m.set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(floats(m.output(0)), (std::vector<float>{3, 4, 5, -2}));
  // Outputs live in the planned arena, at the planned offset.
  EXPECT_EQ(m.output(0).data, r.mem.arenas[0].data() + 128);
  EXPECT_EQ(m.input(0).data, r.mem.arenas[0].data());
  // Running again with new inputs gives new outputs.
  float x2[4] = {0, 0, 0, 10};
  ASSERT_EQ(m.set_input(0, x2, sizeof(x2)), Error::Ok);
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(floats(m.output(0)), (std::vector<float>{2, 2, 2, 12}));
}

TEST_F(Executor, test_output_shape_and_dtype_come_from_the_file) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok());
  const Tensor& y = r.method->output(0);
  EXPECT_EQ(y.dtype, ScalarType::Float32);
  EXPECT_EQ(y.dim, 2);
  EXPECT_EQ(y.sizes[0], 2);
  EXPECT_EQ(y.sizes[1], 2);
  EXPECT_EQ(y.numel, 4);
  EXPECT_EQ(y.nbytes(), 16u);
}

TEST_F(Executor, test_instruction_names_and_debug_nodes) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok());
  EXPECT_STREQ(r.method->instruction_op(0), "test::add_one");
  EXPECT_STREQ(r.method->instruction_node(1), "add_2");
  EXPECT_GT(r.method->metadata_bytes(), 0u);
  EXPECT_LE(r.method->metadata_bytes(), r.mem.allocator.used());
}

TEST_F(Executor, test_execute_instruction_runs_one_step) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok());
  float x[4] = {1, 1, 1, 1};
  ASSERT_EQ(r.method->set_input(0, x, sizeof(x)), Error::Ok);
  ASSERT_EQ(r.method->execute_instruction(0), Error::Ok);
  const float* t = reinterpret_cast<const float*>(r.mem.arenas[0].data() + 64);
  EXPECT_EQ(t[0], 2);
  EXPECT_EQ(r.method->output(0).data_as<float>()[0], 0) << "instruction 1 has not run";
}

TEST_F(Executor, test_execute_instruction_out_of_range_is_invalid_argument) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok());
  EXPECT_EQ(r.method->execute_instruction(2), Error::InvalidArgument);
  EXPECT_EQ(r.method->execute_instruction(SIZE_MAX), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("instruction 18446744073709551615 does not exist (2 instructions)"),
            std::string::npos) << last_error_message();
}

TEST_F(Executor, test_relu_then_add_one) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {3}, 0, arena);
  uint32_t t = m.planned(ScalarType::Float32, {3}, 16, arena);
  uint32_t y = m.planned(ScalarType::Float32, {3}, 32, arena);
  m.call("aten::relu", "", {x, t});
  m.call("test::add_one", "", {t, y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[3] = {-5, 0.5f, 2};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{1, 1.5f, 3}));
}

TEST_F(Executor, test_constant_inputs_point_into_the_file) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t c = m.constant<float>({4}, {10, 20, 30, 40});
  uint32_t y = m.planned(ScalarType::Float32, {4}, 0, arena);
  uint32_t list = m.tensor_list({c, y});
  uint32_t z = m.planned(ScalarType::Float32, {4}, 16, arena);
  m.call("test::add_one", "", {c, y});
  m.call("test::sum_list", "", {list, z});
  m.outputs = {y, z, c};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  EXPECT_EQ(r.method->num_inputs(), 0u);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{11, 21, 31, 41}));
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{21, 41, 61, 81}));
  const uint8_t* cdata = static_cast<const uint8_t*>(r.method->output(2).data);
  EXPECT_EQ(cdata, r.lp.program->segment_data(0)) << "zero-copy constant";
}

TEST_F(Executor, test_scalar_argument_reaches_the_kernel) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  uint32_t z = m.planned(ScalarType::Float32, {2}, 32, arena);
  m.call("test::scale", "", {x, m.double_value(2.5), y});
  m.call("test::scale", "", {y, m.int_value(-2), z});
  m.inputs = {x};
  m.outputs = {y, z};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[2] = {1, 2};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{2.5f, 5}));
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{-5, -10}));
}

TEST_F(Executor, test_kernel_scratch_is_reserved_at_load) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  m.call("test::scratch_double", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  EXPECT_EQ(r.method->scratch_bytes(), test_kernels::kScratchRequest);
  float in[2] = {3, 4};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{6, 8}));
}

TEST_F(Executor, test_kernel_with_two_outs) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {3}, 0, arena);
  uint32_t pos = m.planned(ScalarType::Float32, {3}, 16, arena);
  uint32_t neg = m.planned(ScalarType::Float32, {3}, 32, arena);
  m.call("test::split_sign", "", {x, pos, neg});
  m.inputs = {x};
  m.outputs = {pos, neg};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[3] = {-1, 2, -3};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{0, 2, 0}));
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{-1, 0, -3}));
}

TEST_F(Executor, test_move_copies_tensor_contents) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {4}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {4}, 16, arena);
  uint32_t z = m.planned(ScalarType::Float32, {4}, 32, arena);
  m.move(x, y);
  m.call("test::add_one", "", {y, z});
  m.inputs = {x};
  m.outputs = {y, z};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[4] = {1, 2, 3, 4};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_NE(r.method->output(0).data, r.method->input(0).data);
}

// acc (state, starting at [1, 2, 3, 4]) -> y = acc + 1 -> acc = y: each
// execute adds one to the state, which lives on between calls.
ProgramBuilder counter_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(64);
  const uint32_t init = m.constant<float>({4}, {1, 2, 3, 4});
  const uint32_t acc = m.state_tensor(ScalarType::Float32, {4}, 0, init, "acc", arena);
  const uint32_t y = m.planned(ScalarType::Float32, {4}, 32, arena);
  m.call("test::add_one", "", {acc, y});
  m.move(y, acc);
  m.outputs = {y};
  return pb;
}

TEST_F(Executor, test_state_lives_on_between_calls_and_resets) {
  LoadedMethod r(counter_program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  Method& m = *r.method;
  ASSERT_EQ(m.num_state(), 1u);
  EXPECT_STREQ(m.state_name(0), "acc");
  EXPECT_EQ(m.state(0).data, r.mem.arenas[0].data());
  EXPECT_EQ(floats(m.state(0)), (std::vector<float>{1, 2, 3, 4})) << "set at load";
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(floats(m.output(0)), (std::vector<float>{2, 3, 4, 5}));
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(floats(m.output(0)), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(floats(m.state(0)), (std::vector<float>{3, 4, 5, 6}));
  m.reset_state();
  EXPECT_EQ(floats(m.state(0)), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(floats(m.output(0)), (std::vector<float>{2, 3, 4, 5}));
}

TEST_F(Executor, test_two_methods_loaded_from_one_program_keep_their_own_state) {
  LoadedProgram lp(counter_program().build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem_a(*lp.program, "forward"), mem_b(*lp.program, "forward");
  Result<Method> a = Method::load(*lp.program, "forward", mem_a.manager);
  Result<Method> b = Method::load(*lp.program, "forward", mem_b.manager);
  ASSERT_TRUE(a.ok() && b.ok()) << last_error_message();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(a->execute(), Error::Ok);
  ASSERT_EQ(b->execute(), Error::Ok);
  EXPECT_EQ(floats(a->output(0)), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(floats(b->output(0)), (std::vector<float>{2, 3, 4, 5}));
}

// A loop (format 1.2): add one to x until it is positive (at least once).
//   [0] acc <- x  [1] y = add_one(acc)  [2] acc <- y  [3] stop = positive(y)
//   [4] jump_false(stop, 1)
ProgramBuilder loop_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128);
  const uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
  const uint32_t acc = m.planned(ScalarType::Float32, {1}, 32, arena);
  const uint32_t y = m.planned(ScalarType::Float32, {1}, 64, arena);
  const uint32_t stop = m.planned(ScalarType::Bool, {1}, 96, arena);
  m.move(x, acc);
  m.call("test::add_one", "", {acc, y});
  m.move(y, acc);
  m.call("test::positive", "", {y, stop});
  m.jump_false(stop, 1);
  m.inputs = {x};
  m.outputs = {acc};
  return pb;
}

TEST_F(Executor, test_backward_jump_loops_until_its_condition_holds) {
  LoadedMethod r(loop_program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  for (float start : {-3.5f, -10.5f, 5.5f}) {
    ASSERT_EQ(r.method->set_input(0, &start, sizeof(start)), Error::Ok);
    ASSERT_EQ(r.method->execute(), Error::Ok);
    // add one until positive (at least once: the body runs before the test)
    float want = start + 1;
    while (want <= 0) want += 1;
    EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{want})) << start;
  }
}

TEST_F(Executor, test_a_loop_past_the_budget_stops_with_execution_failed) {
  LoadedProgram lp(loop_program().build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem(*lp.program, "forward");
  MethodOptions options;
  options.max_loop_instructions = 4 * 100;  // each iteration runs instructions 1-4 again
  Result<Method> m = Method::load(*lp.program, "forward", mem.manager, options);
  ASSERT_TRUE(m.ok()) << last_error_message();
  float start = -99.5f;  // 99 jumps back: within the budget
  ASSERT_EQ(m->set_input(0, &start, sizeof(start)), Error::Ok);
  EXPECT_EQ(m->execute(), Error::Ok);
  start = -100.5f;  // 100 jumps back: within
  ASSERT_EQ(m->set_input(0, &start, sizeof(start)), Error::Ok);
  EXPECT_EQ(m->execute(), Error::Ok);
  start = -101.5f;  // 101: one iteration too many
  ASSERT_EQ(m->set_input(0, &start, sizeof(start)), Error::Ok);
  EXPECT_EQ(m->execute(), Error::ExecutionFailed);
  EXPECT_NE(strstr(last_error_message(), "max_loop_instructions"), nullptr) << last_error_message();
  start = -5.5f;  // the budget is per execute()
  ASSERT_EQ(m->set_input(0, &start, sizeof(start)), Error::Ok);
  EXPECT_EQ(m->execute(), Error::Ok);
}

TEST_F(Executor, test_only_tensors_move) {
  // Kernels check their scalar and list arguments at load; a Move that
  // replaced one at execute (here a list, the sizes of a view) would run
  // them unchecked. Every kind but Tensor is refused, naming both values.
  struct Case {
    const char* kind;
    uint32_t (*add)(MethodBuilder&, bool second);
  };
  const Case cases[] = {
      {"Bool", [](MethodBuilder& m, bool s) { return m.bool_value(s); }},
      {"Int", [](MethodBuilder& m, bool s) { return m.int_value(s ? 2 : 1); }},
      {"IntList", [](MethodBuilder& m, bool s) { return m.int_list(s ? std::vector<int64_t>{1, 2, 3, 4} : std::vector<int64_t>{4}); }},
      {"String", [](MethodBuilder& m, bool s) { return m.string_value(s ? "b" : "a"); }},
  };
  for (const Case& c : cases) {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t arena = m.arena(64);
    uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
    uint32_t y = m.planned(ScalarType::Float32, {1}, 16, arena);
    uint32_t to = c.add(m, false);
    uint32_t from = c.add(m, true);
    m.move(from, to);
    m.call("test::add_one", "", {x, y});
    m.inputs = {x};
    m.outputs = {y};
    LoadedProgram lp(pb.build());
    ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
    MethodMemory mem(*lp.program, "forward");
    clear_last_error();
    EXPECT_EQ(Method::load(*lp.program, "forward", mem.manager).error(), Error::InvalidProgram) << c.kind;
    const std::string want = "move from value " + std::to_string(from) + " (" + c.kind + ") to value " +
                             std::to_string(to) + " (" + c.kind + "): a move takes two tensors";
    EXPECT_NE(std::string(last_error_message()).find(want), std::string::npos) << last_error_message();
  }
}

TEST_F(Executor, test_move_between_overlapping_planned_tensors) {
  // The file is untrusted: a move between overlapping ranges must still be
  // well defined (memmove semantics), not undefined memcpy overlap.
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {4}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {4}, 8, arena);
  m.move(x, y);
  m.inputs = {x};
  m.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[4] = {1, 2, 3, 4};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{1, 2, 3, 4}));
}

// [0] jump_false(cond, 2)  [1] y = x + 1  [2] z = x + 1
ProgramBuilder jump_program(bool cond_value) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  uint32_t z = m.planned(ScalarType::Float32, {2}, 32, arena);
  uint32_t cond = m.bool_value(cond_value);
  m.jump_false(cond, 2);
  m.call("test::add_one", "", {x, y});
  m.call("test::add_one", "", {x, z});
  m.inputs = {x};
  m.outputs = {y, z};
  return pb;
}

TEST_F(Executor, test_jump_false_skips_an_instruction) {
  LoadedMethod r(jump_program(false));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[2] = {1, 2};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{0, 0})) << "skipped";
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{2, 3}));
}

TEST_F(Executor, test_jump_false_with_true_condition_falls_through) {
  LoadedMethod r(jump_program(true));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[2] = {1, 2};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{2, 3}));
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{2, 3}));
}

TEST_F(Executor, test_jump_false_on_a_computed_bool_tensor) {
  // if x[0] > 0: y = x + 1 (else y keeps its last value); z = 2 * x
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(128);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  uint32_t z = m.planned(ScalarType::Float32, {2}, 32, arena);
  uint32_t cond = m.planned(ScalarType::Bool, {1}, 64, arena);
  m.call("test::positive", "", {x, cond});
  m.jump_false(cond, 3);
  m.call("test::add_one", "", {x, y});
  m.call("test::scale", "", {x, m.int_value(2), z});
  m.inputs = {x};
  m.outputs = {y, z};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float pos[2] = {1, 2};
  ASSERT_EQ(r.method->set_input(0, pos, sizeof(pos)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{2, 3}));
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{2, 4}));
  float neg[2] = {-1, 5};
  ASSERT_EQ(r.method->set_input(0, neg, sizeof(neg)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{2, 3})) << "skipped: last value";
  EXPECT_EQ(floats(r.method->output(1)), (std::vector<float>{-2, 10}));
}

TEST_F(Executor, test_jump_to_the_end_ends_execution) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {1}, 16, arena);
  m.jump_false(m.bool_value(false), 2);
  m.call("test::add_one", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(r.method->output(0).data_as<float>()[0], 0);
}

TEST_F(Executor, test_free_is_a_no_op_hint) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {1}, 16, arena);
  m.call("test::add_one", "", {x, y});
  m.free_value(x);
  m.inputs = {x};
  m.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float in[1] = {4};
  ASSERT_EQ(r.method->set_input(0, in, sizeof(in)), Error::Ok);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(r.method->output(0).data_as<float>()[0], 5);
}

// x -> fail_if_negative -> y -> add_one -> z
ProgramBuilder failing_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {2}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2}, 16, arena);
  uint32_t z = m.planned(ScalarType::Float32, {2}, 32, arena);
  m.call("test::add_one", "", {x, y});
  m.call("test::fail_if_negative", "", {x, y});
  m.call("test::add_one", "", {y, z});
  m.debug = {{"a", ""}, {"check_x", "model.py:3"}, {"b", ""}};
  m.inputs = {x};
  m.outputs = {z};
  return pb;
}

TEST_F(Executor, test_kernel_failure_is_returned_from_execute) {
  LoadedMethod r(failing_program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  float bad[2] = {1, -1};
  ASSERT_EQ(r.method->set_input(0, bad, sizeof(bad)), Error::Ok);
  EXPECT_EQ(r.method->execute(), Error::ExecutionFailed);
  std::string msg = last_error_message();
  EXPECT_NE(msg.find("instruction 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test::fail_if_negative"), std::string::npos) << msg;
  EXPECT_NE(msg.find("check_x"), std::string::npos) << msg;
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{0, 0})) << "stopped at the failure";
  // The method is still usable.
  float good[2] = {1, 2};
  ASSERT_EQ(r.method->set_input(0, good, sizeof(good)), Error::Ok);
  EXPECT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(floats(r.method->output(0)), (std::vector<float>{2, 3}));
}

TEST_F(Executor, test_set_input_with_wrong_byte_count_is_invalid_argument) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok());
  float x[5] = {};
  EXPECT_EQ(r.method->set_input(0, x, 12), Error::InvalidArgument);
  EXPECT_EQ(r.method->set_input(0, x, 20), Error::InvalidArgument);
  EXPECT_EQ(r.method->set_input(0, x, 0), Error::InvalidArgument);
  EXPECT_EQ(r.method->set_input(1, x, 16), Error::InvalidArgument) << "no input 1";
  EXPECT_EQ(r.method->set_input(0, x, 16), Error::Ok);
}

TEST_F(Executor, test_set_input_tensor_checks_dtype_and_sizes) {
  LoadedMethod r(chain_program());
  ASSERT_TRUE(r.method.ok());
  float data[4] = {1, 2, 3, 4};
  Tensor t;
  t.data = data;
  t.dtype = ScalarType::Float32;
  t.dim = 2;
  t.sizes[0] = 2;
  t.sizes[1] = 2;
  t.numel = 4;
  EXPECT_EQ(r.method->set_input(0, t), Error::Ok);
  Tensor flat = t;
  flat.dim = 1;
  flat.sizes[0] = 4;
  EXPECT_EQ(r.method->set_input(0, flat), Error::InvalidArgument) << "same bytes, other sizes";
  Tensor ints = t;
  ints.dtype = ScalarType::Int32;
  EXPECT_EQ(r.method->set_input(0, ints), Error::InvalidArgument);
  EXPECT_EQ(r.method->set_input(3, t), Error::InvalidArgument);
}

TEST_F(Executor, test_empty_method_executes) {
  ProgramBuilder pb;
  pb.method("forward");
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  EXPECT_EQ(r.method->num_instructions(), 0u);
  EXPECT_EQ(r.method->execute(), Error::Ok);
}

TEST_F(Executor, test_methods_are_independent) {
  // Two Methods of one Program, each with its own memory.
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  MethodMemory mem_a(*lp.program, "forward");
  MethodMemory mem_b(*lp.program, "forward");
  Result<Method> a = Method::load(*lp.program, "forward", mem_a.manager);
  Result<Method> b = Method::load(*lp.program, "forward", mem_b.manager);
  ASSERT_TRUE(a.ok() && b.ok());
  float xa[4] = {1, 1, 1, 1}, xb[4] = {5, 5, 5, 5};
  ASSERT_EQ(a->set_input(0, xa, 16), Error::Ok);
  ASSERT_EQ(b->set_input(0, xb, 16), Error::Ok);
  ASSERT_EQ(a->execute(), Error::Ok);
  ASSERT_EQ(b->execute(), Error::Ok);
  EXPECT_EQ(floats(a->output(0)), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(floats(b->output(0)), (std::vector<float>{7, 7, 7, 7}));
}

TEST_F(Executor, test_program_shared_by_threads_each_with_its_own_method) {
  // DESIGN: a Program is immutable and may be shared; each thread has its own
  // Method and memory. (Run under TSan to check for races.)
  ProgramBuilder pb = chain_program();
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      MethodMemory mem(*lp.program, "forward");
      Result<Method> m = Method::load(*lp.program, "forward", mem.manager);
      if (!m.ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < 200; ++i) {
        float x[4] = {float(t), float(i), 0, 1};
        if (m->set_input(0, x, sizeof(x)) != Error::Ok || m->execute() != Error::Ok ||
            floats(m->output(0)) != std::vector<float>{float(t) + 2, float(i) + 2, 2, 3}) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace tern
