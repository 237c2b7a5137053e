// Dynamic shapes (format 1.3): size expressions (runtime/core/size_expr.h),
// their verification, and methods whose input shapes change between calls
// (runtime/executor/method_shapes.cpp): on hand-built programs, and on the
// frozen tests/data/v1_3/dynamic.tern, whose outputs for the first k batch
// rows must be the first k rows of its recorded outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "extension/module.h"
#include "extension/npy.h"
#include "runtime/core/size_expr.h"
#include "runtime/executor/method_meta.h"
#include "runtime_test_util.h"
#include "tests/cpp/compare.h"

namespace tern {
namespace {

using namespace test;

constexpr int64_t kConst = 0, kSym = 1, kAdd = 2, kSub = 3, kMul = 4, kFloorDiv = 5, kMod = 6, kMax = 7, kMin = 8,
                  kCeilDiv = 9;

bool eval(const std::vector<int64_t>& code, const std::vector<int64_t>& symbols, int64_t* out) {
  const char* why = "";
  if (!size_expr_valid(code.data(), code.size() / 2, static_cast<uint32_t>(symbols.size()), &why)) return false;
  return eval_size_expr(code.data(), code.size() / 2, symbols.data(), out);
}

int64_t value(const std::vector<int64_t>& code, const std::vector<int64_t>& symbols) {
  int64_t v = -12345;
  EXPECT_TRUE(eval(code, symbols, &v));
  return v;
}

TEST(SizeExpr, test_arithmetic_follows_python_integers) {
  EXPECT_EQ(value({kSym, 0, kConst, 1, kAdd, 0, kConst, 64, kMul, 0}, {3}), 256);  // (s0 + 1) * 64
  EXPECT_EQ(value({kSym, 0, kSym, 1, kSub, 0}, {3, 5}), -2);
  // Floor division and modulo round toward -inf, as Python's // and %.
  EXPECT_EQ(value({kConst, -7, kConst, 2, kFloorDiv, 0}, {}), -4);
  EXPECT_EQ(value({kConst, 7, kConst, -2, kFloorDiv, 0}, {}), -4);
  EXPECT_EQ(value({kConst, -7, kConst, 2, kMod, 0}, {}), 1);
  EXPECT_EQ(value({kConst, 7, kConst, -2, kMod, 0}, {}), -1);
  EXPECT_EQ(value({kConst, 7, kConst, 2, kCeilDiv, 0}, {}), 4);
  EXPECT_EQ(value({kConst, -7, kConst, 2, kCeilDiv, 0}, {}), -3);
  EXPECT_EQ(value({kSym, 0, kSym, 1, kMax, 0}, {4, 9}), 9);
  EXPECT_EQ(value({kSym, 0, kSym, 1, kMin, 0}, {4, 9}), 4);
}

TEST(SizeExpr, test_division_by_zero_and_overflow_fail) {
  int64_t v;
  EXPECT_FALSE(eval({kSym, 0, kConst, 0, kFloorDiv, 0}, {3}, &v));
  EXPECT_FALSE(eval({kSym, 0, kConst, 0, kMod, 0}, {3}, &v));
  EXPECT_FALSE(eval({kSym, 0, kSym, 0, kMul, 0}, {int64_t(1) << 40}, &v));
  EXPECT_FALSE(eval({kConst, INT64_MIN, kConst, -1, kFloorDiv, 0}, {}, &v));
  EXPECT_FALSE(eval({kConst, INT64_MAX, kConst, 1, kAdd, 0}, {}, &v));
}

TEST(SizeExpr, test_malformed_code_is_invalid) {
  const char* why = "";
  auto valid = [&](std::vector<int64_t> code, uint32_t symbols) {
    return size_expr_valid(code.data(), code.size() / 2, symbols, &why);
  };
  EXPECT_TRUE(valid({kSym, 0}, 1));
  EXPECT_FALSE(valid({}, 1));
  EXPECT_FALSE(valid({kSym, 1}, 1));                      // symbol out of range
  EXPECT_FALSE(valid({kSym, -1}, 1));
  EXPECT_FALSE(valid({kConst, 1, kAdd, 0}, 0));           // underflow
  EXPECT_FALSE(valid({kConst, 1, kConst, 2}, 0));         // two values left
  EXPECT_FALSE(valid({kConst, 1, 10, 0}, 0));             // unknown opcode
  std::vector<int64_t> deep;
  for (int i = 0; i < 17; ++i) deep.insert(deep.end(), {kConst, 1});
  for (int i = 0; i < 16; ++i) deep.insert(deep.end(), {kAdd, 0});
  EXPECT_FALSE(valid(deep, 0));                           // a stack of 17
  EXPECT_STRNE(why, "");
}

// x [n, 2] (n in 1..8) -> add_one -> t -> aten::view(t, [2 * n]) -> y [2 * n].
ProgramBuilder dynamic_program(int64_t min = 1, int64_t max = 8) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(3 * 64);
  m.symbols = {{"n", min, max}};
  int32_t n = m.size_expr({kSym, 0});
  int32_t two_n = m.size_expr({kConst, 2, kSym, 0, kMul, 0});
  uint32_t x = m.planned(ScalarType::Float32, {max, 2}, 0, arena);
  m.values[x].dyn_sizes = {n, -1};
  uint32_t t = m.planned(ScalarType::Float32, {max, 2}, 64, arena);
  m.values[t].dyn_sizes = {n, -1};
  ValueSpec shape;
  shape.type = fb::Value::IntList;
  shape.ints = {2 * max};
  shape.exprs = {two_n};
  uint32_t s = m.add(shape);
  uint32_t y = m.planned(ScalarType::Float32, {2 * max}, 128, arena);
  m.values[y].dyn_sizes = {two_n};
  m.call("test::add_one", "", {x, t});
  m.call("aten::view", "", {t, s, y});
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

class DynamicShapes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_test_kernels();
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    enable_dynamic_shapes();
  }
};

Tensor input(std::vector<float>& data, int64_t n) {
  return make_tensor(data.data(), ScalarType::Float32, {n, 2});
}

TEST_F(DynamicShapes, test_outputs_follow_the_input_sizes_call_after_call) {
  LoadedMethod r(dynamic_program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  Method& m = *r.method;
  EXPECT_TRUE(m.input_is_dynamic(0));
  EXPECT_EQ(m.output(0).sizes[0], 16);  // loaded at the upper bound
  for (int64_t n : {3, 8, 1, 5, 5, 2}) {
    std::vector<float> x(static_cast<size_t>(2 * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 3;
    ASSERT_EQ(m.set_input(0, input(x, n)), Error::Ok) << last_error_message();
    ASSERT_EQ(m.execute(), Error::Ok) << last_error_message();
    const Tensor& y = m.output(0);
    ASSERT_EQ(y.dim, 1);
    ASSERT_EQ(y.sizes[0], 2 * n);
    ASSERT_EQ(y.numel, 2 * n);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y.data_as<float>()[i], x[i] + 1) << "n " << n << " i " << i;
  }
}

TEST_F(DynamicShapes, test_a_size_outside_the_bounds_is_refused_naming_input_dim_and_symbol) {
  LoadedMethod r(dynamic_program(2, 8));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  Method& m = *r.method;
  std::vector<float> x(20);
  for (int64_t n : {9, 1}) {
    clear_last_error();
    EXPECT_EQ(m.set_input(0, input(x, n)), Error::InvalidArgument);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("input 0 dim 0 is " + std::to_string(n) + ", outside 2..8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'n'"), std::string::npos) << msg;
  }
  // A static dim that differs.
  Tensor wrong = make_tensor(x.data(), ScalarType::Float32, {4, 3});
  EXPECT_EQ(m.set_input(0, wrong), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0 dim 1 must be 2, got 3"), std::string::npos);
  // Refusals leave the method usable.
  ASSERT_EQ(m.set_input(0, input(x, 4)), Error::Ok);
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(m.output(0).sizes[0], 8);
}

TEST_F(DynamicShapes, test_method_meta_reports_each_input_dims_range) {
  LoadedProgram lp(dynamic_program(2, 8).build());
  ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
  Result<MethodMeta> meta = lp.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  Result<DimRange> d0 = meta->input_dim_range(0, 0), d1 = meta->input_dim_range(0, 1);
  ASSERT_TRUE(d0.ok() && d1.ok());
  EXPECT_TRUE(d0->dynamic);
  EXPECT_EQ(d0->min, 2);
  EXPECT_EQ(d0->max, 8);
  EXPECT_STREQ(d0->symbol, "n");
  EXPECT_FALSE(d1->dynamic);
  EXPECT_EQ(d1->min, 2);
  EXPECT_EQ(d1->max, 2);
  EXPECT_FALSE(meta->input_dim_range(0, 2).ok());
  EXPECT_FALSE(meta->input_dim_range(1, 0).ok());
}

// Each broken variant of dynamic_program() is refused at Program::load.
void expect_refused(ProgramBuilder pb, const char* message) {
  LoadedProgram lp(pb.build());
  EXPECT_EQ(lp.error, Error::InvalidProgram) << message;
  EXPECT_NE(std::string(last_error_message()).find(message), std::string::npos) << last_error_message();
}

TEST(DynamicShapesVerifier, test_broken_dynamic_fields_are_refused_naming_them) {
  enable_dynamic_shapes();
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].size_exprs[1] = {kConst, 2, kMul, 0};
    expect_refused(pb, "size expression 1: stack underflow");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].size_exprs[0] = {kSym, 1};
    expect_refused(pb, "size expression 0: symbol out of range");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].size_exprs[0] = {kSym, 0, kConst};
    expect_refused(pb, "size expression 0: odd length");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].values[0].dyn_sizes = {0};
    expect_refused(pb, "value 0: 1 dynamic sizes for 2 dims");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].values[1].dyn_sizes = {7, -1};
    expect_refused(pb, "value 1: a dim refers to size expression 7 (2 expressions)");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].values[2].exprs = {-2};
    expect_refused(pb, "value 2: an IntList item refers to size expression -2");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].values[2].exprs = {1, 1};
    expect_refused(pb, "value 2: 2 expressions for 1 IntList items");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].symbols[0] = {"n", 5, 4};
    expect_refused(pb, "symbol 0 (n): bounds 5..4");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].symbols.push_back({"m", 1, 4});  // no input dim is m
    expect_refused(pb, "symbol 1 (m) is not the size of any input dim");
  }
  {
    ProgramBuilder pb = dynamic_program();
    pb.methods()[0].values[0].dyn_sizes = {1, -1};  // 2 * n: the input no longer gives n
    expect_refused(pb, "symbol 0 (n) is not the size of any input dim");
  }
}

TEST_F(DynamicShapes, test_a_size_that_outgrows_its_plan_is_refused) {
  ProgramBuilder pb = dynamic_program();
  // y planned for 8 elements only, though 2 * n reaches 16.
  pb.methods()[0].values[3].sizes = {8};
  LoadedProgram lp(pb.build());
  ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
  MethodMemory mem(*lp.program, "forward");
  Result<Method> method = Method::load(*lp.program, "forward", mem.manager);
  EXPECT_FALSE(method.ok());  // at load, every symbol at its upper bound: 16 > 8
  EXPECT_NE(std::string(last_error_message()).find("does not fit its planned memory"), std::string::npos)
      << last_error_message();
}

// Each dim within its own bound is not enough: x is planned [2, 8], its dims
// n (1..16) and 16 / n hold 16 elements together, but a caller may pass
// [16, 8], each dim in range, 128 elements. set_input must refuse it before
// it copies anything.
TEST_F(DynamicShapes, test_sizes_each_in_range_that_together_outgrow_the_plan_are_refused_before_the_copy) {
  ProgramBuilder pb;
  MethodBuilder& mb = pb.method("forward");
  const uint32_t arena = mb.arena(128);
  mb.symbols = {{"n", 1, 16}};
  const int32_t n = mb.size_expr({kSym, 0});
  const int32_t rest = mb.size_expr({kConst, 16, kSym, 0, kFloorDiv, 0});
  const uint32_t x = mb.planned(ScalarType::Float32, {2, 8}, 0, arena);
  mb.values[x].dyn_sizes = {n, rest};
  const uint32_t y = mb.planned(ScalarType::Float32, {2, 8}, 64, arena);
  mb.values[y].dyn_sizes = {n, rest};
  mb.call("test::add_one", "", {x, y});
  mb.inputs = {x};
  mb.outputs = {y};
  LoadedMethod r(pb);
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  Method& m = *r.method;
  std::vector<float> big(16 * 8, 1.f);
  const std::vector<float> before(static_cast<const float*>(m.output(0).data),
                                  static_cast<const float*>(m.output(0).data) + 16);
  clear_last_error();
  EXPECT_EQ(m.set_input(0, make_tensor(big.data(), ScalarType::Float32, {16, 8})), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0 has more elements than the 16 planned"),
            std::string::npos) << last_error_message();
  // Nothing was copied: y, planned right after x, is as it was.
  EXPECT_EQ(std::vector<float>(static_cast<const float*>(m.output(0).data),
                               static_cast<const float*>(m.output(0).data) + 16), before);
  // Sizes that hold together still run.
  std::vector<float> ok(16, 2.f);
  ASSERT_EQ(m.set_input(0, make_tensor(ok.data(), ScalarType::Float32, {4, 4})), Error::Ok) << last_error_message();
  ASSERT_EQ(m.execute(), Error::Ok) << last_error_message();
  EXPECT_EQ(m.output(0).sizes[0], 4);
  EXPECT_EQ(m.output(0).data_as<float>()[15], 3.f);
}

// The frozen file: batch 1..6, seq 2..16; recorded at batch 4, seq 7.
class FrozenDynamic : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(register_portable_kernels(), Error::Ok); }

  void SetUp() override {
    const std::string stem = std::string(TERN_TEST_DATA_DIR) + "/v1_3/dynamic";
    for (int i = 0; i < 2; ++i) ASSERT_EQ(read_npy((stem + ".input" + std::to_string(i) + ".npy").c_str(), &in[i]), Error::Ok);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(read_npy((stem + ".output" + std::to_string(i) + ".npy").c_str(), &want[i]), Error::Ok);
    ASSERT_EQ(module.load((stem + ".tern").c_str(), Module::Options{Module::LoadMode::File, GetParam()}), Error::Ok)
        << last_error_message();
  }

  // The first `batch` rows of the recorded inputs.
  Result<Span<const Tensor>> run(int64_t batch, int64_t seq = 7) {
    inputs[0] = in[0].tensor();
    inputs[1] = in[1].tensor();
    for (Tensor& t : inputs) {
      t.sizes[0] = batch;
      t.sizes[1] = seq;
      t.numel = 1;
      for (int d = 0; d < t.dim; ++d) t.numel *= t.sizes[d];
    }
    return module.forward({inputs, 2});
  }

  NpyArray in[2], want[3];
  Tensor inputs[2];
  Module module;
};

TEST_P(FrozenDynamic, test_the_first_rows_of_a_batch_give_the_first_rows_of_its_outputs) {
  for (int64_t batch : {4, 1, 3, 4, 2}) {
    auto outs = run(batch);
    ASSERT_TRUE(outs.ok()) << last_error_message();
    ASSERT_EQ(outs->size(), 3u);
    for (size_t o = 0; o < 3; ++o) {
      const Tensor& got = (*outs)[o];
      Tensor full = want[o].tensor();
      ASSERT_EQ(got.dim, full.dim) << "output " << o;
      EXPECT_EQ(got.sizes[0], batch) << "output " << o;
      for (int d = 1; d < full.dim; ++d) EXPECT_EQ(got.sizes[d], full.sizes[d]) << "output " << o << " dim " << d;
      ASSERT_TRUE(test::all_close(got.data_as<float>(), full.data_as<float>(), size_t(got.numel), 1e-5, -1,
                                  "batch " + std::to_string(batch) + " output " + std::to_string(o)));
    }
  }
}

TEST_P(FrozenDynamic, test_inputs_that_disagree_or_leave_the_bounds_are_refused) {
  inputs[0] = in[0].tensor();
  inputs[1] = in[1].tensor();
  inputs[1].sizes[0] = 3;  // batch 4 and 3
  inputs[1].numel = 21;
  clear_last_error();
  EXPECT_FALSE(module.forward({inputs, 2}).ok());
  EXPECT_NE(std::string(last_error_message()).find("input 1 dim 0 is 3, but the other input sizes make it 4"),
            std::string::npos) << last_error_message();
  EXPECT_FALSE(run(7).ok());  // batch 1..6
  EXPECT_NE(std::string(last_error_message()).find("outside 1..6"), std::string::npos) << last_error_message();
  EXPECT_FALSE(run(2, 1).ok());  // seq 2..16
  EXPECT_NE(std::string(last_error_message()).find("'seq'"), std::string::npos) << last_error_message();
  ASSERT_TRUE(run(4).ok()) << last_error_message();
}

INSTANTIATE_TEST_SUITE_P(Threads, FrozenDynamic, ::testing::Values(1, 2));

}  // namespace
}  // namespace tern
