// The cpu backend with dynamic sizes (payload version 5, Backend::reshape):
// a delegate of a method whose input x [n, 4] has a dynamic n (1..8). The
// payload binds its symbol to x's dim 0 and sizes its values by expressions
// of it; the executor reshapes the delegate whenever n changes. Crafted
// payloads whose expressions outgrow their plan, or whose ops stop fitting,
// at some input size are refused at that size, naming the value or the op.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "backends/cpu/schema/cpu_generated.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "malformed_programs.h"
#include "runtime/core/log.h"
#include "runtime_test_util.h"

namespace tern {
namespace {

using namespace test;
namespace cpufb = ::tern::backends::cpu::fb;

constexpr int64_t kMax = 8, kCols = 4;
constexpr int64_t kConst = 0, kSym = 1, kSub = 3;

// What a crafted payload changes: the workspace value t's dim-0 expression
// (payload expression 1; expression 0 is the symbol), the symbol's input,
// a value's expression index.
struct Craft {
  std::vector<int64_t> t_rows = {kSym, 0};  // t [rows, 4]
  uint32_t symbol_input = 0;
  int32_t y_expr = 0;
};

// t = 2 x + 1 (Unary), y = t (Copy), every value [n, 4] planned as [8, 4].
std::vector<uint8_t> payload(const Craft& c) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int64_t> sizes = {kMax, kCols};
  const std::vector<int32_t> by_n = {0, -1}, by_y = {c.y_expr, -1}, by_t = {1, -1};
  std::vector<flatbuffers::Offset<cpufb::Value>> values = {
      cpufb::CreateValueDirect(b, &sizes, cpufb::Storage::Input, 0, 0, cpufb::DType::Float32, &by_n),
      cpufb::CreateValueDirect(b, &sizes, cpufb::Storage::Output, 0, 0, cpufb::DType::Float32, &by_y),
      cpufb::CreateValueDirect(b, &sizes, cpufb::Storage::Workspace, 0, 0, cpufb::DType::Float32, &by_t)};
  std::vector<flatbuffers::Offset<cpufb::Op>> ops = {
      cpufb::CreateOpDirect(b, cpufb::OpKind::Unary,
                            cpufb::CreateUnary(b, 0, 2, cpufb::Activation::None, -HUGE_VALF, HUGE_VALF, 2.f, 1.f).Union(),
                            "affine"),
      cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, cpufb::CreateCopy(b, 2, 1).Union(), "copy")};
  std::vector<flatbuffers::Offset<cpufb::Symbol>> symbols = {cpufb::CreateSymbol(b, c.symbol_input, 0)};
  const std::vector<int64_t> n = {kSym, 0};
  std::vector<flatbuffers::Offset<cpufb::SizeExpr>> exprs = {cpufb::CreateSizeExprDirect(b, &n),
                                                            cpufb::CreateSizeExprDirect(b, &c.t_rows)};
  const uint64_t workspace = kMax * kCols * sizeof(float);
  b.Finish(cpufb::CreateProgramDirect(b, &values, &ops, 1, 1, workspace, &symbols, &exprs));
  std::vector<uint8_t> p((16 + b.GetSize() + 63) / 64 * 64);
  memcpy(p.data(), "TCPU", 4);
  write_le(p.data(), 4, 5, 4);  // version 5: dynamic sizes
  write_le(p.data(), 8, b.GetSize(), 8);
  memcpy(p.data() + 16, b.GetBufferPointer(), b.GetSize());
  return p;
}

// The method: x [n, 4] (n in 1..8) -> the delegate -> y [n, 4].
ProgramBuilder program(const Craft& c = {}) {
  ProgramBuilder pb;
  pb.version_minor = 3;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(3 * 256);
  m.symbols = {{"n", 1, kMax}};
  const int32_t n = m.size_expr({kSym, 0});
  const uint32_t x = m.planned(ScalarType::Float32, {kMax, kCols}, 0, arena);
  const uint32_t y = m.planned(ScalarType::Float32, {kMax, kCols}, 256, arena);
  const uint32_t ws = m.planned(ScalarType::UInt8, {kMax * kCols * 4}, 512, arena);
  m.values[x].dyn_sizes = {n, -1};
  m.values[y].dyn_sizes = {n, -1};
  m.backend_call("cpu", payload(c), {x}, {y, ws});
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

class CpuDynamic : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
    enable_dynamic_shapes();
  }

  // Sets x to n rows of distinct values and runs.
  static Error run(Method& m, int64_t n, std::vector<float>* x) {
    x->resize(size_t(n * kCols));
    for (size_t i = 0; i < x->size(); ++i) (*x)[i] = float(i) * 0.5f - float(n);
    const Error e = m.set_input(0, make_tensor(x->data(), ScalarType::Float32, {n, kCols}));
    return e != Error::Ok ? e : m.execute();
  }
};

TEST_F(CpuDynamic, test_the_delegate_follows_the_input_sizes_call_after_call) {
  LoadedMethod r(program());
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  Method& m = *r.method;
  EXPECT_EQ(m.output(0).sizes[0], kMax);  // loaded at the upper bound
  for (int64_t n : {3, 8, 1, 5, 5, 2, 8}) {
    std::vector<float> x;
    ASSERT_EQ(run(m, n, &x), Error::Ok) << "n " << n << ": " << last_error_message();
    const Tensor& y = m.output(0);
    ASSERT_EQ(y.sizes[0], n);
    ASSERT_EQ(y.numel, n * kCols);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y.data_as<float>()[i], 2 * x[i] + 1) << "n " << n << " i " << i;
  }
}

// t's rows are 16 - n: 8 at load (n = 8), 12 at n = 4, past the 8 planned.
TEST_F(CpuDynamic, test_a_value_that_outgrows_its_plan_at_some_size_is_refused_there) {
  Craft c;
  c.t_rows = {kConst, 16, kSym, 0, kSub, 0};
  LoadedMethod r(program(c));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  std::vector<float> x;
  EXPECT_EQ(run(*r.method, 8, &x), Error::Ok) << last_error_message();
  EXPECT_EQ(run(*r.method, 4, &x), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 2: 48 elements at these input sizes, 32 planned"),
            std::string::npos) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find("backend cpu, delegate 0"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(run(*r.method, 8, &x), Error::Ok) << last_error_message();  // back in its plan: runs again
}

// t's rows are n * n / 8: n at n = 8, 2 at n = 4, where the Unary's x has 4.
TEST_F(CpuDynamic, test_an_op_whose_sizes_stop_fitting_at_some_size_is_refused_there) {
  Craft c;
  c.t_rows = {kSym, 0, kSym, 0, 4, 0, kConst, 8, 5, 0};
  LoadedMethod r(program(c));
  ASSERT_TRUE(r.method.ok()) << last_error_message();
  std::vector<float> x;
  EXPECT_EQ(run(*r.method, 8, &x), Error::Ok) << last_error_message();
  EXPECT_EQ(run(*r.method, 4, &x), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("op 0 (affine)"), std::string::npos) << last_error_message();
}

TEST_F(CpuDynamic, test_a_symbol_of_no_input_or_an_expression_out_of_range_is_refused_at_load) {
  Craft wrong_input;
  wrong_input.symbol_input = 1;
  LoadedMethod a(program(wrong_input));
  EXPECT_FALSE(a.method.ok());
  EXPECT_NE(std::string(last_error_message()).find("symbol 0: input 1 of 1"), std::string::npos)
      << last_error_message();
  Craft wrong_expr;
  wrong_expr.y_expr = 2;
  LoadedMethod b(program(wrong_expr));
  EXPECT_FALSE(b.method.ok());
  EXPECT_NE(std::string(last_error_message()).find("value 1 dim 0: expression 2 of 2"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace tern
