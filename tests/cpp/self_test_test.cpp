// Bundled self-tests (extension/self_test.h): the comparison rule, and
// Module::self_test() on files whose tests pass, whose expected outputs were
// changed, whose kernel computes wrong values, whose tests do not fit the
// method, and that bundle none; and a reader of the schema before self-tests
// (tests/cpp/schema/) verifies and reads a file that has them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "extension/module.h"
#include "kernels/portable/register.h"
#include "program_builder.h"
#include "runtime/core/log.h"
#include "runtime/kernel/registry.h"
#include "tests/schema/tern_before_self_tests_generated.h"

namespace tern {
namespace {

using test::AlignedBytes;
using test::ProgramBuilder;

// ---------------------------------------------------------------------------
// compare_output: the rule, element by element.

struct Pair {
  std::vector<uint8_t> got, want;
  std::vector<int64_t> sizes;
  ScalarType dtype;

  template <typename T>
  Pair(ScalarType t, const std::vector<T>& g, const std::vector<T>& w)
      : got(g.size() * sizeof(T)), want(w.size() * sizeof(T)), sizes{static_cast<int64_t>(g.size())}, dtype(t) {
    memcpy(got.data(), g.data(), got.size());
    memcpy(want.data(), w.data(), want.size());
  }

  OutputComparison compare(double rtol, double atol) {
    const Tensor g = make_tensor(got.data(), dtype, sizes.data(), 1);
    BundledTensor e;
    e.info.dtype = dtype;
    e.info.sizes = Span<const int64_t>(sizes.data(), sizes.size());
    e.data = Span<const uint8_t>(want.data(), want.size());
    return compare_output(g, e, rtol, atol);
  }
};

TEST(CompareOutput, test_equal_floats_pass_with_zero_error) {
  Pair p(ScalarType::Float32, std::vector<float>{1.f, -2.f, 0.f}, {1.f, -2.f, 0.f});
  const OutputComparison c = p.compare(0, 0);
  EXPECT_TRUE(c.passed);
  EXPECT_EQ(c.max_abs_error, 0.0);
  EXPECT_EQ(c.max_rel_error, 0.0);
}

// The bound atol + rtol * |e| scales with each element: 1000.25 passes
// against 1000 at rtol 1e-3 (bound 1), 1.25 against 1 does not (bound 1e-3).
TEST(CompareOutput, test_tolerance_is_relative_to_each_expected_element) {
  Pair p(ScalarType::Float32, std::vector<float>{1000.25f, 1.25f}, {1000.f, 1.f});
  const OutputComparison c = p.compare(1e-3, 0);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.max_abs_error, 0.25);
  EXPECT_EQ(c.max_rel_error, 0.25);
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_EQ(c.worst_got, 1.25);
  EXPECT_EQ(c.worst_expected, 1.0);
  EXPECT_TRUE(p.compare(1e-3, 0.25).passed);  // atol covers the small one
}

TEST(CompareOutput, test_nan_expects_nan_and_inf_expects_the_same_inf) {
  const float nan = std::nanf(""), inf = INFINITY;
  EXPECT_TRUE(Pair(ScalarType::Float32, std::vector<float>{nan, inf, -inf}, {nan, inf, -inf}).compare(0, 0).passed);
  const struct {
    float got, want;
  } bad[] = {{1.f, nan}, {nan, 1.f}, {inf, 1.f}, {1.f, inf}, {-inf, inf}, {inf, nan}};
  for (const auto& b : bad) {
    const OutputComparison c = Pair(ScalarType::Float32, std::vector<float>{0.f, b.got}, {0.f, b.want}).compare(1, 1e30);
    EXPECT_FALSE(c.passed) << b.got << " vs " << b.want;
    EXPECT_TRUE(std::isinf(c.max_abs_error)) << b.got << " vs " << b.want;
    EXPECT_EQ(c.worst_index, 1);
  }
}

TEST(CompareOutput, test_integers_compare_exactly_with_atol_in_their_units) {
  const int64_t big = (int64_t(1) << 62) + 1;  // not a double: the difference of 1 must still count
  Pair p(ScalarType::Int64, std::vector<int64_t>{big, 7}, {big - 1, 7});
  OutputComparison c = p.compare(0, 0);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.max_abs_error, 1.0);
  EXPECT_EQ(c.worst_index, 0);
  EXPECT_TRUE(p.compare(0, 1).passed);
  Pair extremes(ScalarType::Int64, std::vector<int64_t>{INT64_MIN}, {INT64_MAX});  // no overflow
  EXPECT_EQ(extremes.compare(0, 0).max_abs_error, 18446744073709551615.0);
  EXPECT_FALSE(Pair(ScalarType::Bool, std::vector<uint8_t>{1, 0}, {1, 1}).compare(0, 0).passed);
  EXPECT_TRUE(Pair(ScalarType::UInt8, std::vector<uint8_t>{200, 0}, {200, 0}).compare(0, 0).passed);
}

TEST(CompareOutput, test_half_precision_is_compared_in_its_values) {
  // 1.0 and 1.5 in float16 (0x3c00, 0x3e00) and bfloat16 (0x3f80, 0x3fc0).
  const OutputComparison h = Pair(ScalarType::Float16, std::vector<uint16_t>{0x3e00}, {0x3c00}).compare(0, 0);
  EXPECT_EQ(h.max_abs_error, 0.5);
  const OutputComparison b = Pair(ScalarType::BFloat16, std::vector<uint16_t>{0x3fc0}, {0x3f80}).compare(0, 0);
  EXPECT_EQ(b.max_abs_error, 0.5);
}

// ---------------------------------------------------------------------------
// Module::self_test on files.

// Method `name`: y = x + c (aten::add.Tensor), x and c [4] float32.
void add_method(ProgramBuilder& pb, const char* name, const std::vector<float>& c_values) {
  test::MethodBuilder& m = pb.method(name);
  const uint32_t arena = m.arena(128);
  const uint32_t x = m.planned(ScalarType::Float32, {4}, 0, arena);
  const uint32_t c = m.constant<float>({4}, c_values);
  const uint32_t alpha = m.int_value(1);
  const uint32_t y = m.planned(ScalarType::Float32, {4}, 64, arena);
  m.call("aten::add", "Tensor", {x, c, alpha, y});
  m.inputs = {x};
  m.outputs = {y};
}

// forward: y = x + [1, 2, 3, 4], with one bundled test:
// x = [0.5, -1, 2, 0] -> [1.5, 1, 5, 4].
ProgramBuilder add_program() {
  ProgramBuilder pb;
  add_method(pb, "forward", {1.f, 2.f, 3.f, 4.f});
  ProgramBuilder::SelfTestSpec t;
  t.inputs = {ProgramBuilder::floats({4}, {0.5f, -1.f, 2.f, 0.f})};
  t.expected = {ProgramBuilder::floats({4}, {1.5f, 1.f, 5.f, 4.f})};
  t.rtol = {1e-4};
  t.atol = {1e-5};
  pb.self_tests = {t};
  return pb;
}

// A broken aten::add for float32: right, except element 2, which it makes
// 0.25 too large. It declines (the portable kernel runs) unless g_break_add.
bool g_break_add = false;
Error broken_add_run(RunContext&, EValue* const* args) {
  const Tensor &a = args[0]->tensor, &b = args[1]->tensor;
  Tensor& y = args[3]->tensor;
  for (int64_t i = 0; i < y.numel; ++i) {
    y.data_as<float>()[i] = a.data_as<float>()[i] + b.data_as<float>()[i] + (i == 2 ? 0.25f : 0.f);
  }
  return Error::Ok;
}
Error broken_add_prepare(PrepareContext& ctx, Span<EValue* const>) {
  if (!g_break_add) return ctx.fail(Error::OperatorMissing, "not broken now");
  ctx.set_run(broken_add_run);
  return Error::Ok;
}
const OpKernel kBroken[] = {{"aten::add.Tensor", 1, broken_add_prepare, dtype_bit(ScalarType::Float32)}};

struct Collected {
  std::vector<SelfTestRecord> records;
};
void collect(const SelfTestRecord& r, void* context) { static_cast<Collected*>(context)->records.push_back(r); }

class SelfTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_kernel_library({"broken", 100, kBroken}), Error::Ok);
  }
  void SetUp() override {
    set_log_level(LogLevel::Fatal);  // expected failures; the checks read last_error_message()
    g_break_add = false;
  }
  void TearDown() override { set_log_level(LogLevel::Info); }

  // Loads `pb`'s file, runs its self-tests; the records in *out.
  Error run(const ProgramBuilder& pb, Collected* out) {
    file_ = pb.build();
    const Error e = module_.load_buffer(file_.data(), file_.size(), {Module::LoadMode::Mmap, 1});
    if (e != Error::Ok) return e;
    return module_.self_test(collect, out);
  }

  AlignedBytes file_;
  Module module_;
};

TEST_F(SelfTest, test_bundled_test_passes_with_a_record_per_output) {
  Collected c;
  ASSERT_EQ(run(add_program(), &c), Error::Ok) << last_error_message();
  ASSERT_EQ(c.records.size(), 1u);
  const SelfTestRecord& r = c.records[0];
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.error, Error::Ok);
  EXPECT_EQ(r.comparison.max_abs_error, 0.0);
  EXPECT_STREQ(r.method, "forward");
  EXPECT_EQ(r.expected.info.dtype, ScalarType::Float32);
  EXPECT_EQ(r.rtol, 1e-4);
  EXPECT_EQ(r.atol, 1e-5);
  EXPECT_STREQ(r.message, "");
  // The program's view of the same test.
  ASSERT_EQ(module_.program().num_self_tests(), 1u);
  const BundledTest t = module_.program().self_test(0);
  EXPECT_EQ(t.num_inputs(), 1u);
  EXPECT_EQ(t.input(0).data.size(), 16u);
  EXPECT_EQ(t.expected(0).info.sizes[0], 4);
}

TEST_F(SelfTest, test_changed_expected_output_fails_naming_the_element_and_tolerance) {
  ProgramBuilder pb = add_program();
  const float wrong = 5.5f;  // element 2 expected 5
  memcpy(pb.self_tests[0].expected[0].data.data() + 8, &wrong, 4);
  Collected c;
  ASSERT_EQ(run(pb, &c), Error::SelfTestFailed);
  ASSERT_EQ(c.records.size(), 1u);
  const SelfTestRecord& r = c.records[0];
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.error, Error::Ok);  // compared, and different
  EXPECT_EQ(r.comparison.max_abs_error, 0.5);
  EXPECT_EQ(r.comparison.worst_index, 2);
  EXPECT_EQ(r.comparison.worst_got, 5.0);
  EXPECT_EQ(r.comparison.worst_expected, 5.5);
  EXPECT_NE(std::string(r.message).find("max abs error 0.5"), std::string::npos) << r.message;
  const std::string log = last_error_message();
  EXPECT_NE(log.find("self-test failed: 1 of 1 outputs; test 0 (method 'forward') output 0"), std::string::npos) << log;
  EXPECT_NE(log.find("atol 1e-05 + rtol 0.0001"), std::string::npos) << log;
}

TEST_F(SelfTest, test_broken_kernel_fails_with_its_error) {
  g_break_add = true;  // bound at Method::load: the file is the one that passes above
  Collected c;
  ASSERT_EQ(run(add_program(), &c), Error::SelfTestFailed);
  ASSERT_EQ(c.records.size(), 1u);
  EXPECT_FALSE(c.records[0].passed);
  EXPECT_EQ(c.records[0].comparison.max_abs_error, 0.25);
  EXPECT_EQ(c.records[0].comparison.max_rel_error, 0.05);  // 0.25 / 5
  EXPECT_EQ(c.records[0].comparison.worst_index, 2);
  EXPECT_EQ(c.records[0].comparison.worst_got, 5.25);
}

TEST_F(SelfTest, test_state_is_reset_so_tests_repeat) {
  Collected c;
  ASSERT_EQ(run(add_program(), &c), Error::Ok);
  ASSERT_EQ(module_.self_test(collect, &c), Error::Ok);
  EXPECT_EQ(c.records.size(), 2u);
}

// A test of another method than forward (a file of several, as a language
// model's prefill and decode): Module loads it for the test.
TEST_F(SelfTest, test_a_test_of_a_second_method_runs_that_method) {
  ProgramBuilder pb = add_program();
  add_method(pb, "second", {10.f, 20.f, 30.f, 40.f});
  ProgramBuilder::SelfTestSpec t = pb.self_tests[0];
  t.method = "second";
  t.expected = {ProgramBuilder::floats({4}, {10.5f, 19.f, 32.f, 40.f})};
  pb.self_tests.push_back(t);
  Collected c;
  ASSERT_EQ(run(pb, &c), Error::Ok) << last_error_message();
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_STREQ(c.records[0].method, "forward");
  EXPECT_STREQ(c.records[1].method, "second");
  EXPECT_EQ(c.records[1].test, 1u);
  EXPECT_TRUE(c.records[1].passed);
}

TEST_F(SelfTest, test_missing_method_is_not_found_in_the_record) {
  ProgramBuilder pb = add_program();
  pb.self_tests[0].method = "decode";
  Collected c;
  ASSERT_EQ(run(pb, &c), Error::NotFound);
  ASSERT_EQ(c.records.size(), 1u);
  EXPECT_FALSE(c.records[0].passed);
  EXPECT_EQ(c.records[0].error, Error::NotFound);
  EXPECT_NE(std::string(c.records[0].message).find("did not run: NotFound: method 'decode'"), std::string::npos)
      << c.records[0].message;
}

TEST_F(SelfTest, test_inputs_or_outputs_that_do_not_fit_are_invalid_argument) {
  ProgramBuilder wrong_dtype = add_program();
  wrong_dtype.self_tests[0].inputs[0].dtype = ScalarType::Int32;  // 4 int32s: the same 16 bytes
  Collected c;
  ASSERT_EQ(run(wrong_dtype, &c), Error::InvalidArgument);
  EXPECT_NE(std::string(c.records.at(0).message).find("input 0:"), std::string::npos) << c.records[0].message;

  ProgramBuilder wrong_shape = add_program();
  wrong_shape.self_tests[0].expected[0].sizes = {2, 2};
  Collected d;
  ASSERT_EQ(run(wrong_shape, &d), Error::SelfTestFailed);
  EXPECT_EQ(d.records.at(0).error, Error::InvalidArgument);
  EXPECT_STREQ(d.records[0].message, "the output is float32 [4], expected float32 [2, 2]");

  ProgramBuilder two_inputs = add_program();
  two_inputs.self_tests[0].inputs.push_back(two_inputs.self_tests[0].inputs[0]);
  Collected e;
  ASSERT_EQ(run(two_inputs, &e), Error::InvalidArgument);
  EXPECT_NE(std::string(e.records.at(0).message).find("the test has 2 inputs"), std::string::npos);
}

TEST_F(SelfTest, test_file_without_tests_is_not_found_and_says_so) {
  ProgramBuilder pb = add_program();
  pb.self_tests.clear();
  Collected c;
  ASSERT_EQ(run(pb, &c), Error::NotFound);
  EXPECT_TRUE(c.records.empty());
  EXPECT_NE(std::string(last_error_message()).find("no bundled self-tests"), std::string::npos);
}

// An older runtime ignores the appended field: the flatbuffer of a file with
// self-tests passes the FlatBuffers verifier generated from the schema
// before them (the step of Program::load that would see the unknown field)
// and reads as the same program.
TEST(SelfTestFormat, test_a_reader_of_the_schema_before_self_tests_verifies_and_reads_the_file) {
  ProgramBuilder with = add_program();
  ProgramBuilder without = add_program();
  without.self_tests.clear();
  const std::vector<uint8_t> a = with.flatbuffer(), b = without.flatbuffer();
  ASSERT_GT(a.size(), b.size() + 32);  // the tests are in there
  namespace old = fb_before_self_tests;
  flatbuffers::Verifier va(a.data(), a.size()), vb(b.data(), b.size());
  ASSERT_TRUE(old::VerifyProgramBuffer(va));
  ASSERT_TRUE(old::VerifyProgramBuffer(vb));
  const old::Program* pa = old::GetProgram(a.data());
  const old::Program* pb = old::GetProgram(b.data());
  ASSERT_EQ(pa->methods()->size(), 1u);
  EXPECT_STREQ(pa->methods()->Get(0)->name()->c_str(), "forward");
  EXPECT_EQ(pa->methods()->Get(0)->values()->size(), pb->methods()->Get(0)->values()->size());
  EXPECT_EQ(pa->methods()->Get(0)->instructions()->size(), pb->methods()->Get(0)->instructions()->size());
  EXPECT_EQ(pa->metadata(), nullptr);
  // The new reader sees the tests; the old one's table has no field for them.
  EXPECT_EQ(fb::GetProgram(a.data())->self_tests()->size(), 1u);
}

}  // namespace
}  // namespace tern
