// Backend calls (format 1.1): verification of delegates, Method::load
// initializing them on registered backends (runtime/backend/backend.h),
// execution, destruction, and MethodMeta. The backend is test_backend.h.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime_test_util.h"
#include "test_backend.h"

namespace tern {
namespace {

using namespace test;

struct TtbOp {
  uint32_t opcode, dst, a, b;
};

// A tern_test payload (see test_backend.h).
std::vector<uint8_t> ttb_payload(uint32_t inputs, const std::vector<std::vector<float>>& consts, uint32_t temps,
                                 uint32_t outputs, const std::vector<TtbOp>& ops, int64_t numel) {
  std::vector<uint8_t> p = {'T', 'T', 'B', '1'};
  auto put = [&](const void* d, size_t n) { p.insert(p.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n); };
  const uint32_t counts[] = {inputs, uint32_t(consts.size()), temps, outputs, uint32_t(ops.size())};
  put(counts, sizeof(counts));
  put(&numel, 8);
  for (const auto& c : consts) put(c.data(), c.size() * 4);
  for (const TtbOp& op : ops) put(&op, sizeof(op));
  return p;
}

// y = relu(x * w - x) + 1 on the backend (w a constant in the payload, 1 too),
// then z = neg(y) on the portable kernel. x, y, z: float32 [6].
ProgramBuilder delegate_program(std::vector<uint8_t> payload, const std::string& backend = "tern_test") {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(192);
  uint32_t x = m.planned(ScalarType::Float32, {6}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {6}, 64, arena);
  uint32_t z = m.planned(ScalarType::Float32, {6}, 128, arena);
  m.backend_call(backend, std::move(payload), {x}, {y});
  m.call("aten::neg", "", {y, z});
  m.debug = {{"fused_0", ""}, {"neg", "model.py:4 in forward: -y"}};
  m.inputs = {x};
  m.outputs = {z, y};
  return pb;
}

std::vector<uint8_t> good_payload() {
  // slots: 0 x | 1 w, 2 ones | 3, 4 temps | 5 y
  return ttb_payload(1, {{1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1}}, 2, 1,
                     {{2, 3, 0, 1}, {1, 4, 3, 0}, {3, 3, 4, 0}, {0, 5, 3, 2}}, 6);
}

class Backends : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    register_test_backend();
  }
};

TEST_F(Backends, test_backend_call_runs_the_delegate_then_kernels_read_its_output) {
  for (int threads : {1, 3}) {
    ProgramBuilder pb = delegate_program(good_payload());
    LoadedProgram lp(pb.build());
    ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
    MethodMemory mem(*lp.program, "forward");
    Result<Method> m = Method::load(*lp.program, "forward", mem.manager, {threads});
    ASSERT_TRUE(m.ok()) << last_error_message();
    EXPECT_EQ(m->instruction_kind(0), InstructionKind::BackendCall);
    EXPECT_STREQ(m->instruction_op(0), "tern_test");
    float x[6] = {-1, 0.5f, 2, -3, 1, 0};
    ASSERT_EQ(m->set_input(0, x, sizeof(x)), Error::Ok);
    ASSERT_EQ(m->execute(), Error::Ok);
    const float* y = m->output(1).data_as<float>();
    const float* z = m->output(0).data_as<float>();
    const float w[6] = {1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 6; ++i) {
      const float want = std::max(x[i] * w[i] - x[i], 0.f) + 1.f;
      EXPECT_EQ(y[i], want) << "element " << i << ", " << threads << " threads";
      EXPECT_EQ(z[i], -want);
    }
  }
}

TEST_F(Backends, test_unregistered_backend_fails_the_load_naming_it) {
  clear_last_error();
  LoadedMethod r(delegate_program(good_payload(), "npu_that_is_not_here"));
  EXPECT_EQ(r.method.error(), Error::NotSupported);
  EXPECT_NE(std::string(last_error_message()).find("backend 'npu_that_is_not_here' is not registered"),
            std::string::npos) << last_error_message();
}

TEST_F(Backends, test_malformed_payload_fails_with_the_backends_reason) {
  std::vector<uint8_t> truncated = good_payload();
  truncated.resize(truncated.size() - 3);
  std::vector<uint8_t> bad_slot = ttb_payload(1, {}, 0, 1, {{0, 1, 0, 7}}, 6);  // reads slot 7 of 2
  std::vector<uint8_t> writes_input = ttb_payload(1, {}, 0, 1, {{0, 0, 0, 0}}, 6);
  std::vector<uint8_t> wrong_numel = ttb_payload(1, {}, 0, 1, {{3, 1, 0, 0}}, 7);
  const char* reasons[] = {"payload has", "out of range", "out of range", "of 7 elements"};
  std::vector<uint8_t>* payloads[] = {&truncated, &bad_slot, &writes_input, &wrong_numel};
  for (int k = 0; k < 4; ++k) {
    clear_last_error();
    LoadedMethod r(delegate_program(*payloads[k]));
    EXPECT_EQ(r.method.error(), Error::InvalidProgram) << k;
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("delegate 0 (backend tern_test): "), std::string::npos) << msg;
    EXPECT_NE(msg.find(reasons[k]), std::string::npos) << msg;
  }
}

TEST_F(Backends, test_each_delegate_is_destroyed_once_with_its_method) {
  const int before = test_backend_destroyed();
  {
    LoadedMethod r(delegate_program(good_payload()));
    ASSERT_TRUE(r.method.ok()) << last_error_message();
    Method moved = std::move(*r.method);  // the moved-from method must not destroy it too
    EXPECT_EQ(test_backend_destroyed(), before);
  }
  EXPECT_EQ(test_backend_destroyed(), before + 1);
}

TEST_F(Backends, test_failed_load_destroys_the_delegates_it_initialized) {
  ProgramBuilder pb = delegate_program(good_payload());
  MethodBuilder& m = pb.methods()[0];
  uint32_t x = m.inputs[0];
  uint32_t extra = m.planned(ScalarType::Float32, {6}, 0, 0);
  m.backend_call("tern_test", {'b', 'a', 'd'}, {x}, {extra});
  m.debug.clear();
  const int before = test_backend_destroyed();
  {
    LoadedMethod r(pb);
    EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  }
  EXPECT_EQ(test_backend_destroyed(), before + 1);  // delegate 0 was initialized, delegate 1 failed
}

TEST_F(Backends, test_delegate_output_must_be_planned_memory) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t c = m.constant<float>({6}, {1, 2, 3, 4, 5, 6});
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {6}, 0, arena);
  m.backend_call("tern_test", ttb_payload(1, {}, 0, 1, {{3, 1, 0, 0}}, 6), {x}, {c});
  m.inputs = {x};
  m.outputs = {x};
  LoadedMethod r(pb);
  EXPECT_EQ(r.method.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("is not planned tensor memory"), std::string::npos);
}

// The event hook (tern-run --trace) sees each instruction begin and end, the
// backend call included, in order; detached, it sees nothing.
TEST_F(Backends, test_event_hook_brackets_every_instruction) {
  LoadedMethod r(delegate_program(good_payload()));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  std::vector<std::pair<size_t, bool>> seen;
  r.method->set_event_hook([](void* user, size_t i, bool begin) {
    static_cast<std::vector<std::pair<size_t, bool>>*>(user)->emplace_back(i, begin);
  }, &seen);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  const std::vector<std::pair<size_t, bool>> want = {{0, true}, {0, false}, {1, true}, {1, false}};
  EXPECT_EQ(seen, want);
  r.method->set_event_hook(nullptr, nullptr);
  ASSERT_EQ(r.method->execute(), Error::Ok);
  EXPECT_EQ(seen.size(), 4u);
}

// ------------------------------------------------------------- verification

Error load_error(const ProgramBuilder& pb) { return LoadedProgram(pb.build()).error; }

TEST_F(Backends, test_verifier_rejects_bad_delegates) {
  {
    ProgramBuilder pb = delegate_program(good_payload());
    pb.methods()[0].instructions[0].a = 1;  // only delegate 0 exists
    EXPECT_EQ(load_error(pb), Error::InvalidProgram);
  }
  {
    ProgramBuilder pb = delegate_program(good_payload());
    pb.methods()[0].delegates[0].payload_segment = 5;
    EXPECT_EQ(load_error(pb), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("payload segment 5 out of range"), std::string::npos);
  }
  {
    ProgramBuilder pb = delegate_program(good_payload());
    MethodBuilder& m = pb.methods()[0];
    m.delegates[0].inputs = {m.int_value(3)};
    EXPECT_EQ(load_error(pb), Error::InvalidProgram);
  }
  {
    ProgramBuilder pb = delegate_program(good_payload());
    pb.methods()[0].delegates[0].outputs = {9999};
    EXPECT_EQ(load_error(pb), Error::InvalidProgram);
  }
  {
    ProgramBuilder pb = delegate_program(good_payload());
    pb.methods()[0].delegates[0].has_backend = false;
    EXPECT_EQ(load_error(pb), Error::InvalidProgram);
  }
  {
    ProgramBuilder pb = delegate_program(good_payload(), std::string(65, 'x'));
    EXPECT_EQ(load_error(pb), Error::InvalidProgram);
  }
}

// ---------------------------------------------------------------- MethodMeta

TEST_F(Backends, test_method_meta_describes_the_method_without_loading_it) {
  LoadedProgram lp(delegate_program(good_payload(), "not_registered_is_fine_here").build());
  ASSERT_EQ(lp.error, Error::Ok);
  Result<MethodMeta> meta = lp.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_STREQ(meta->name(), "forward");
  ASSERT_EQ(meta->num_inputs(), 1u);
  ASSERT_EQ(meta->num_outputs(), 2u);
  TensorInfo x = *meta->input(0);
  EXPECT_EQ(x.dtype, ScalarType::Float32);
  ASSERT_EQ(x.dim(), 1);
  EXPECT_EQ(x.sizes[0], 6);
  EXPECT_EQ(x.nbytes(), 24u);
  EXPECT_EQ(meta->num_arenas(), 1u);
  EXPECT_EQ(*meta->arena_size(0), 192u);
  EXPECT_EQ(meta->num_instructions(), 2u);
  ASSERT_EQ(meta->num_operators(), 1u);
  EXPECT_STREQ(meta->operator_name(0), "aten::neg");
  EXPECT_STREQ(meta->operator_overload(0), "");
  ASSERT_EQ(meta->num_delegates(), 1u);
  EXPECT_STREQ(meta->delegate_backend(0), "not_registered_is_fine_here");
  EXPECT_EQ(meta->input(1).error(), Error::InvalidArgument);
  EXPECT_EQ(meta->output(2).error(), Error::InvalidArgument);
  EXPECT_EQ(meta->arena_size(1).error(), Error::InvalidArgument);
  EXPECT_STREQ(meta->delegate_backend(1), "");
  EXPECT_EQ(lp.program->method_meta("backward").error(), Error::NotFound);
}

}  // namespace
}  // namespace tern
