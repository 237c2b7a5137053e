// The cpu backend's payload is untrusted (it is not covered by the file's
// checksum): load_cpu_program (backends/cpu/program.cpp) must refuse a damaged one with an
// error, never read or write out of bounds. Mutates the payload of frozen
// files (tests/data/v1_1/cpu_block.tern: payload version 1, convolutions,
// pools, linear; cpu_ops_v2.tern: version 2, attention, grouped and
// transposed convolutions, concats; cpu_chain.tern: row chains, Conv.fuse_next;
// cpu_qs8.tern: version 3, int8 values, QConv, Quantize, Dequantize;
// cpu_qs8_ops, cpu_qs8_dynamic, cpu_qs4_weight: QPool, QBinary,
// DynamicQuantize, QLinear, WLinear; cpu_winograd_v5: version 5, Winograd
// kernels transformed at load, Conv.winograd_element, where cpu_ops_v2's
// carry them transformed, as payloads before version 5 did)
// byte by byte and at random, loads and runs each mutant. Under
// `make test-sanitize` ASan and UBSan watch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "backends/cpu/program.h"
#include "kernels/portable/register.h"
#include "malformed_programs.h"
#include "runtime/core/log.h"
#include "runtime/executor/memory_manager.h"
#include "runtime_test_util.h"
#include "tests/cpp/random_util.h"

namespace tern {
namespace {

using namespace test;

AlignedBytes read_file(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return AlignedBytes();
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  AlignedBytes b(static_cast<size_t>(n));
  if (fread(b.data(), 1, b.size(), f) != b.size()) b = AlignedBytes();
  fclose(f);
  return b;
}

// What loading and running a (mutated) file did: the step that refused it
// ("Program::load", "Method::load" or "execute") with its Error and message,
// or "ran" with the outputs' sizes and whether they are all finite.
struct Outcome {
  std::string step = "ran";
  Error error = Error::Ok;
  std::string message;
  std::vector<ScalarType> output_dtypes;
  std::vector<std::vector<int64_t>> output_sizes;
  bool finite = true;  // every float32 output element
};

Outcome refused(const char* step, Error e) {
  Outcome o;
  o.step = step, o.error = e, o.message = last_error_message();
  return o;
}

// Loads bytes as a program and its forward method; runs it once if it loads.
Outcome run_outcome(const AlignedBytes& bytes) {
  LoadedProgram lp(bytes);
  if (lp.error != Error::Ok) return refused("Program::load", lp.error);
  MethodMemory mem(*lp.program, "forward", 1 << 20);
  Result<Method> m = Method::load(*lp.program, "forward", mem.manager, {2});
  if (!m.ok()) return refused("Method::load", m.error());
  const Error e = m->execute();
  if (e != Error::Ok) return refused("execute", e);
  Outcome o;
  for (size_t i = 0; i < m->num_outputs(); ++i) {
    const Tensor& t = m->output(i);
    o.output_dtypes.push_back(t.dtype);
    o.output_sizes.emplace_back(t.sizes, t.sizes + t.dim);
    if (t.dtype == ScalarType::Float32) {
      for (int64_t k = 0; k < t.numel; ++k) o.finite = o.finite && std::isfinite(t.data_as<float>()[k]);
    }
  }
  return o;
}

Error load_and_run(const AlignedBytes& bytes) { return run_outcome(bytes).error; }

std::string describe(const Outcome& o) {
  if (o.step == "ran") return std::string("ran") + (o.finite ? "" : ", outputs not finite");
  return "refused at " + o.step + " with " + error_name(o.error) + ": " + o.message;
}

class CpuPayload : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
    set_log_level(LogLevel::Fatal);  // thousands of expected refusals
  }
  static void TearDownTestSuite() { set_log_level(LogLevel::Info); }

  void SetUp() override {
    file = read_file(std::string(TERN_TEST_DATA_DIR) + "/v1_1/" + GetParam() + ".tern");
    ASSERT_GT(file.size(), 0u);
    LoadedProgram lp(file);
    ASSERT_EQ(lp.error, Error::Ok);
    Result<MethodMeta> meta = lp.program->method_meta("forward");
    ASSERT_TRUE(meta.ok());
    ASSERT_EQ(meta->num_delegates(), 1u);
    ASSERT_STREQ(meta->delegate_backend(0), "cpu");
    // the payload is the last segment
    const size_t seg = lp.program->num_segments() - 1;
    payload_begin = static_cast<size_t>(lp.program->segment_data(seg) - lp.bytes.data());
    payload_size = static_cast<size_t>(lp.program->segment_size(seg));
    original = run_outcome(file);
    ASSERT_EQ(original.step, "ran") << describe(original);
    ASSERT_TRUE(original.finite);
  }

  // A mutant's outcome is one of:
  //  - refused by the cpu backend's payload checks at Method::load (the
  //    payload is not covered by the file's checksum, so Program::load takes
  //    it and nothing reaches execute): NotSupported, naming the payload
  //    version, when the magic is intact and the version is no longer one this
  //    runtime reads; otherwise InvalidProgram; the message names the delegate;
  //  - ran: execute returned Ok, with as many outputs, of the same dtypes
  //    and sizes, as the unmutated file's. Their values are not a criterion:
  //    weights, scales, clamp bounds and activation kinds are payload data, so
  //    a damaged payload may compute other numbers, infinities and NaN
  //    included (which ones depends on the ISA); reading or writing out of
  //    bounds is what ASan and UBSan watch for in `make test-sanitize`.
  void expect_refused_or_harmless(const AlignedBytes& m, const Outcome& o, const std::string& what) {
    SCOPED_TRACE(std::string(GetParam()) + ", " + what + ": " + describe(o));
    if (o.step == "ran") {
      EXPECT_EQ(o.output_dtypes, original.output_dtypes);
      EXPECT_EQ(o.output_sizes, original.output_sizes);
      return;
    }
    EXPECT_EQ(o.step, "Method::load");
    const uint8_t* p = m.data() + payload_begin;
    const uint32_t version = uint32_t(p[4]) | uint32_t(p[5]) << 8 | uint32_t(p[6]) << 16 | uint32_t(p[7]) << 24;
    const uint32_t newest = 7;  // backends/cpu/loader.cpp kVersion
    const bool bad_version = memcmp(p, "TCPU", 4) == 0 && (version < 1 || version > newest);
    EXPECT_EQ(o.error, bad_version ? Error::NotSupported : Error::InvalidProgram);
    EXPECT_NE(o.message.find("(backend cpu)"), std::string::npos);
    if (bad_version) {
      EXPECT_NE(o.message.find("payload version " + std::to_string(version)), std::string::npos);
    }
  }

  AlignedBytes file;
  Outcome original;
  size_t payload_begin = 0, payload_size = 0;
};

TEST_P(CpuPayload, test_every_header_and_flatbuffer_byte_flipped_is_refused_or_harmless) {
  // the header and the flatbuffer: where sizes, offsets and indices live
  const size_t fb_end = std::min(payload_size, size_t(16) + 4096);
  int refused = 0;
  for (size_t i = 0; i < fb_end; ++i) {
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
      AlignedBytes m = file;
      m[payload_begin + i] ^= flip;
      const Outcome o = run_outcome(m);
      refused += o.step != "ran";
      char where[96];
      snprintf(where, sizeof(where), "payload byte %zu ^ 0x%02x", i, flip);
      expect_refused_or_harmless(m, o, where);
    }
  }
  EXPECT_GT(refused, 0);  // the mutations did reach the checks
}

TEST_P(CpuPayload, test_random_multi_byte_mutations_are_refused_or_harmless) {
  std::mt19937 rng(1234);
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    AlignedBytes m = file;
    const int edits = 1 + int(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = payload_begin + rng() % std::min<size_t>(payload_size, 4096);
      m[at] = static_cast<uint8_t>(rng());
    }
    const Outcome o = run_outcome(m);
    refused += o.step != "ran";
    expect_refused_or_harmless(m, o, "round " + std::to_string(round));
  }
  EXPECT_GT(refused, 0);
}

TEST_P(CpuPayload, test_truncated_payload_is_refused) {
  // shrink the payload segment's recorded size: the blob and flatbuffer no longer fit
  AlignedBytes m = file;
  LoadedProgram lp(file);
  const size_t seg = lp.program->num_segments() - 1;
  for (size_t keep : {size_t(0), size_t(8), size_t(20), payload_size / 2, payload_size - 1}) {
    AlignedBytes t = file;
    write_le(t, segment_entry_pos(t, seg) + 8, keep, 8);
    EXPECT_NE(load_and_run(t), Error::Ok) << "payload cut to " << keep << " bytes";
  }
}

// Crafted payloads with sizes an exporter never writes: one op over values
// 2.. (`extra`: each at offset 0 of its storage, index 0), values 0 and 1
// being the delegate's x and y ([4], malformed::cpu_program). The blob holds
// `weight_floats` zeros.
namespace cpufb = ::tern::backends::cpu::fb;
struct ExtraValue {
  std::vector<int64_t> sizes;
  cpufb::Storage storage = cpufb::Storage::Workspace;
  cpufb::DType dtype = cpufb::DType::Float32;
};

template <typename MakeOp>
std::vector<uint8_t> one_op_payload(const std::vector<ExtraValue>& extra, size_t weight_floats, MakeOp make_op,
                                    uint64_t workspace_bytes = 0) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int64_t> four = {4};
  std::vector<flatbuffers::Offset<cpufb::Value>> values = {
      cpufb::CreateValueDirect(b, &four, cpufb::Storage::Input, 0, 0),
      cpufb::CreateValueDirect(b, &four, cpufb::Storage::Output, 0, 0)};
  for (const ExtraValue& v : extra) values.push_back(cpufb::CreateValueDirect(b, &v.sizes, v.storage, 0, 0, v.dtype));
  return malformed::cpu_payload_of(b, values, {make_op(b)}, workspace_bytes,
                                   std::vector<uint8_t>(weight_floats * sizeof(float), 0));
}

AlignedBytes cpu_file_of(std::vector<uint8_t> payload) {
  ProgramBuilder pb;
  malformed::cpu_program(pb, std::move(payload));
  return pb.build();
}

// The same delegate (x, y [4] float32) with a 512-byte workspace, for
// payloads whose values live there (int8 ones: the delegate's x and y are float32).
AlignedBytes cpu_file_with_workspace(std::vector<uint8_t> payload) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128 + 512);
  const uint32_t x = m.planned(ScalarType::Float32, {4}, 0, arena);
  const uint32_t y = m.planned(ScalarType::Float32, {4}, 64, arena);
  const uint32_t ws = m.planned(ScalarType::UInt8, {512}, 128, arena);
  m.backend_call("cpu", std::move(payload), {x}, {y, ws});
  m.inputs = {x};
  m.outputs = {y};
  return pb.build();
}

class CpuCrafted : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
  }
};

// Pool over empty x and y [0, 1, N, 1], N = 439125228929 < 2^40, kernel
// 10897 x 3855: ow * c * taps is 2^64 - 1, which the thread grain once
// computed in int64 (overflow, then a division by zero). Empty, it runs and
// does nothing.
TEST_F(CpuCrafted, test_a_pool_whose_work_per_row_overflows_runs_empty) {
  const int64_t n = 439125228929;
  const std::vector<int32_t> kernel = {10897, 3855}, stride = {1, 1}, padding = {5448, 1927};
  const AlignedBytes file = cpu_file_of(one_op_payload({{{0, 1, n, 1}}, {{0, 1, n, 1}}}, 0, [&](flatbuffers::FlatBufferBuilder& b) {
    const auto pool = cpufb::CreatePoolDirect(b, 2, 3, cpufb::PoolKind::Max, &kernel, &stride, &padding);
    return cpufb::CreateOpDirect(b, cpufb::OpKind::Pool, pool.Union(), "pool");
  }));
  EXPECT_EQ(load_and_run(file), Error::Ok) << last_error_message();
}

// A Copy, a Slice and a Concat reading a delegate input that has no
// elements and no storage (data null): each runs and copies nothing, without
// handing memmove the null pointer (undefined even for 0 bytes: UBSan's
// nonnull-attribute check under make test-sanitize).
TEST_F(CpuCrafted, test_copy_slice_and_concat_of_an_empty_input_without_storage_run) {
  auto file = [&](int64_t y_size, auto make_op, std::vector<ExtraValue> extra = {}) {
    flatbuffers::FlatBufferBuilder b;
    malformed::CpuValues values = {malformed::cpu_value(b, {0}, cpufb::Storage::Input),
                                   malformed::cpu_value(b, {y_size}, cpufb::Storage::Output)};
    for (const ExtraValue& v : extra) values.push_back(malformed::cpu_value(b, v.sizes, v.storage, 0, v.dtype));
    std::vector<uint8_t> blob(64, 0);
    const float four[4] = {1.f, 2.f, 3.f, 4.f};
    memcpy(blob.data(), four, sizeof(four));
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    const uint32_t arena = m.arena(64);
    const uint32_t x = m.empty_tensor(ScalarType::Float32, {0});
    const uint32_t y = m.planned(ScalarType::Float32, {y_size}, 0, arena);
    const uint32_t ws = m.empty_tensor(ScalarType::UInt8, {0});
    m.backend_call("cpu", malformed::cpu_payload_of(b, values, {make_op(b)}, 0, blob), {x}, {y, ws});
    m.outputs = {y};
    return pb.build();
  };
  const AlignedBytes copy = file(0, [](flatbuffers::FlatBufferBuilder& b) {
    return cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, cpufb::CreateCopy(b, 0, 1).Union(), "copy");
  });
  const AlignedBytes slice = file(0, [](flatbuffers::FlatBufferBuilder& b) {
    return cpufb::CreateOpDirect(b, cpufb::OpKind::Slice, cpufb::CreateSlice(b, 0, 1, 1, 0).Union(), "slice");
  });
  // y [4] = cat(x [0], w [4]): w, a weights value, fills the row
  const AlignedBytes concat = file(4, [](flatbuffers::FlatBufferBuilder& b) {
    const std::vector<uint32_t> xs = {0, 2};
    const std::vector<int64_t> offsets = {0, 0};
    return cpufb::CreateOpDirect(b, cpufb::OpKind::Concat, cpufb::CreateConcatDirect(b, &xs, &offsets, 1, 1).Union(),
                                 "cat");
  }, {{{4}, cpufb::Storage::Weights}});
  for (const AlignedBytes* f : {&copy, &slice, &concat}) {
    LoadedProgram lp(*f);
    ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
    MethodMemory mem(*lp.program, "forward", 1 << 20);
    Result<Method> m = Method::load(*lp.program, "forward", mem.manager);
    ASSERT_TRUE(m.ok()) << last_error_message();
    ASSERT_EQ(m->execute(), Error::Ok) << last_error_message();
    const Tensor& y = m->output(0);
    for (int64_t i = 0; i < y.numel; ++i) EXPECT_EQ(y.data_as<float>()[i], float(i + 1)) << "element " << i;
  }
}

// A convolution of batch 0 (x and y [0, 1, 1, 1]): refused at load (its
// kernels divide the work by the pixels), not a division by zero at execute.
TEST_F(CpuCrafted, test_a_convolution_of_batch_0_is_refused) {
  const std::vector<int32_t> one = {1, 1}, zero = {0, 0};
  const AlignedBytes file = cpu_file_of(one_op_payload(
      {{{0, 1, 1, 1}}, {{0, 1, 1, 1}}, {{32}, cpufb::Storage::Weights}}, 32, [&](flatbuffers::FlatBufferBuilder& b) {
        const auto conv = cpufb::CreateConvDirect(b, 2, 4, -1, 3, &one, &one, &zero, &one);
        return cpufb::CreateOpDirect(b, cpufb::OpKind::Conv, conv.Union(), "conv");
      }));
  clear_last_error();
  EXPECT_EQ(load_and_run(file), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("conv sizes do not fit x [0, 1, 1, 1] -> y (needs g.n >= 1)"),
            std::string::npos) << last_error_message();
  // batch 1, x and y the delegate's own [1, 1, 1, 4]: the same op runs
  const AlignedBytes ok = cpu_file_of(one_op_payload(
      {{{1, 1, 1, 4}, cpufb::Storage::Input}, {{1, 1, 1, 4}, cpufb::Storage::Output}, {{80}, cpufb::Storage::Weights}},
      80, [&](flatbuffers::FlatBufferBuilder& b) {
        const auto conv = cpufb::CreateConvDirect(b, 2, 4, -1, 3, &one, &one, &zero, &one);
        return cpufb::CreateOpDirect(b, cpufb::OpKind::Conv, conv.Union(), "conv");
      }));
  EXPECT_EQ(load_and_run(ok), Error::Ok) << last_error_message();
}

// A depthwise Conv's output size is the one its window gives over the
// padding before and padding_end after (absent: the same as before); its row
// kernel relies on it. x and y [1, 2, 2, 1], a 3x3 window at stride 1.
TEST_F(CpuCrafted, test_a_depthwise_convolution_is_refused_unless_its_padding_end_gives_its_output_size) {
  const std::vector<int32_t> one = {1, 1}, three = {3, 3}, pad = {1, 1};
  auto file = [&](const std::vector<int32_t>* padding_end) {
    return cpu_file_of(one_op_payload(
        {{{1, 2, 2, 1}, cpufb::Storage::Input}, {{1, 2, 2, 1}, cpufb::Storage::Output}, {{160}, cpufb::Storage::Weights}},
        160, [&](flatbuffers::FlatBufferBuilder& b) {
          const auto conv = cpufb::CreateConvDirect(b, 2, 4, -1, 3, &three, &one, &pad, &one, true,
                                                    cpufb::Activation::None, -INFINITY, INFINITY, 0, 0, 0, 0, false,
                                                    padding_end);
          return cpufb::CreateOpDirect(b, cpufb::OpKind::Conv, conv.Union(), "dwconv");
        }));
  };
  const std::vector<int32_t> same = {1, 1}, short_bottom = {0, 1}, short_right = {1, 0};
  EXPECT_EQ(load_and_run(file(nullptr)), Error::Ok) << last_error_message();
  EXPECT_EQ(load_and_run(file(&same)), Error::Ok) << last_error_message();
  for (const auto* end : {&short_bottom, &short_right}) {
    clear_last_error();
    EXPECT_EQ(load_and_run(file(end)), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find(end == &short_bottom ? "g.oh == window_out" : "g.ow == window_out"),
              std::string::npos) << last_error_message();
  }
}

// A bool value (one byte an element) is an Attention's mask and nothing
// else: a Copy reading one as float32 would read four times its bytes.
TEST_F(CpuCrafted, test_a_bool_value_is_refused_anywhere_but_an_attention_mask) {
  const AlignedBytes file = cpu_file_with_workspace(one_op_payload(
      {{{4}, cpufb::Storage::Workspace, cpufb::DType::Bool}}, 0,
      [&](flatbuffers::FlatBufferBuilder& b) {
        return cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, cpufb::CreateCopy(b, 2, 1).Union(), "copy");
      },
      512));
  clear_last_error();
  EXPECT_EQ(load_and_run(file), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 2 is bool, the op takes float32 there"), std::string::npos)
      << last_error_message();
}

// An int8 value where an op takes float32 (a Unary over int8 bytes would
// read 4 bytes an element of a 1-byte one): refused, naming the value.
TEST_F(CpuCrafted, test_an_int8_value_where_an_op_takes_float32_is_refused) {
  const AlignedBytes file = cpu_file_with_workspace(one_op_payload(
      {{{4}, cpufb::Storage::Workspace, cpufb::DType::Int8}}, 0, [&](flatbuffers::FlatBufferBuilder& b) {
        const auto unary = cpufb::CreateUnary(b, 2, 1);
        return cpufb::CreateOpDirect(b, cpufb::OpKind::Unary, unary.Union(), "unary");
      }, 64));
  clear_last_error();
  EXPECT_EQ(load_and_run(file), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 2 is int8, the op takes float32"), std::string::npos)
      << last_error_message();
}

// A QConv over int8 x and y [1, 1, 1, 4] (a 4 -> 4 linear layer): 64 packed
// weight bytes (one panel of 1 tap x 4 inputs x 16 columns) and 4 scales. One
// byte short, a zero point outside int8, or a float32 x: each refused.
TEST_F(CpuCrafted, test_a_qconv_is_refused_unless_weights_parameters_and_dtypes_fit) {
  const std::vector<int32_t> one = {1, 1}, zero = {0, 0};
  auto file = [&](int64_t weight_bytes, int32_t x_zero_point, cpufb::DType x_dtype) {
    return cpu_file_with_workspace(one_op_payload(
        {{{1, 1, 1, 4}, cpufb::Storage::Workspace, x_dtype},
         {{1, 1, 1, 4}, cpufb::Storage::Workspace, cpufb::DType::Int8},
         {{weight_bytes}, cpufb::Storage::Weights, cpufb::DType::Int8},
         {{4}, cpufb::Storage::Weights}},
        64, [&](flatbuffers::FlatBufferBuilder& b) {
          const auto qconv = cpufb::CreateQConvDirect(b, 2, 4, 5, -1, 3, &one, &one, &zero, &one, false, 0.5f,
                                                      x_zero_point, 0.25f, 0);
          return cpufb::CreateOpDirect(b, cpufb::OpKind::QConv, qconv.Union(), "qconv");
        }, 64));
  };
  EXPECT_EQ(load_and_run(file(64, 3, cpufb::DType::Int8)), Error::Ok) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file(63, 3, cpufb::DType::Int8)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("63 packed int8 weights, the geometry needs 64"),
            std::string::npos) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file(64, 128, cpufb::DType::Int8)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("bad quantization"), std::string::npos) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file(64, 3, cpufb::DType::Float32)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 2 is float32, the op takes int8"), std::string::npos)
      << last_error_message();
}

// A QBinary over int8 a, b, y [4] (in the workspace): runs; refused with b
// of other sizes, a Sub (only Add and Mul are), or a zero scale.
TEST_F(CpuCrafted, test_a_qbinary_is_refused_unless_sizes_kind_and_parameters_fit) {
  auto file = [&](std::vector<int64_t> b_sizes, cpufb::BinaryKind kind, float a_scale) {
    return cpu_file_with_workspace(one_op_payload(
        {{{4}, cpufb::Storage::Workspace, cpufb::DType::Int8},
         {b_sizes, cpufb::Storage::Workspace, cpufb::DType::Int8},
         {{4}, cpufb::Storage::Workspace, cpufb::DType::Int8}},
        0, [&](flatbuffers::FlatBufferBuilder& b) {
          const auto q = cpufb::CreateQBinary(b, 2, 3, 4, kind, a_scale, 1, 0.5f, -2, 4.0f, 3);
          return cpufb::CreateOpDirect(b, cpufb::OpKind::QBinary, q.Union(), "qbinary");
        }, 64));
  };
  EXPECT_EQ(load_and_run(file({4}, cpufb::BinaryKind::Add, 0.25f)), Error::Ok) << last_error_message();
  EXPECT_EQ(load_and_run(file({4}, cpufb::BinaryKind::Mul, 0.25f)), Error::Ok) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file({2, 2}, cpufb::BinaryKind::Add, 0.25f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("operand sizes differ"), std::string::npos) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file({4}, cpufb::BinaryKind::Sub, 0.25f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("bad kind or quantization"), std::string::npos)
      << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find("(needs q.kind() == fb::BinaryKind::Add || q.kind() == "
                                                   "fb::BinaryKind::Mul)"), std::string::npos) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file({4}, cpufb::BinaryKind::Add, 0.0f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("bad kind or quantization"), std::string::npos)
      << last_error_message();
}

// A QPool over int8 x [1, 4, 4, 2] -> y [1, 2, 2, 2] (in the workspace),
// 3 x 3 taps, stride 2, padding 1: runs, max and average; refused with a
// float32 x, a zero scale, a window the sizes do not give, or more than
// 65536 taps (an int32 sum could overflow).
TEST_F(CpuCrafted, test_a_qpool_is_refused_unless_dtypes_window_and_parameters_fit) {
  auto file = [&](cpufb::DType x_dtype, cpufb::PoolKind kind, std::vector<int32_t> kernel, float x_scale,
                  std::vector<int64_t> x_sizes = {1, 4, 4, 2}) {
    const std::vector<int32_t> stride = {2, 2}, padding = {1, 1};
    const int64_t x_bytes = x_sizes[1] * x_sizes[2] * x_sizes[3] * (x_dtype == cpufb::DType::Int8 ? 1 : 4);
    return cpu_file_with_workspace(one_op_payload(
        {{x_sizes, cpufb::Storage::Weights, x_dtype}, {{1, 2, 2, 2}, cpufb::Storage::Workspace, cpufb::DType::Int8}},
        size_t(x_bytes + 3) / 4, [&](flatbuffers::FlatBufferBuilder& b) {
          const auto q = cpufb::CreateQPoolDirect(b, 2, 3, kind, &kernel, &stride, &padding, false, x_scale, 3, 8.0f,
                                                  -1);
          return cpufb::CreateOpDirect(b, cpufb::OpKind::QPool, q.Union(), "qpool");
        }, 256));
  };
  for (cpufb::PoolKind kind : {cpufb::PoolKind::Max, cpufb::PoolKind::Average}) {
    EXPECT_EQ(load_and_run(file(cpufb::DType::Int8, kind, {3, 3}, 0.25f)), Error::Ok) << last_error_message();
  }
  clear_last_error();
  EXPECT_EQ(load_and_run(file(cpufb::DType::Float32, cpufb::PoolKind::Max, {3, 3}, 0.25f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 2 is float32, the op takes int8"), std::string::npos)
      << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file(cpufb::DType::Int8, cpufb::PoolKind::Max, {3, 3}, 0.0f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("bad quantization"), std::string::npos) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file(cpufb::DType::Int8, cpufb::PoolKind::Max, {2, 2}, 0.25f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("pool sizes do not fit"), std::string::npos) << last_error_message();
  // 257 x 257 taps over x [1, 257, 257, 2]: the window fits (y 2 x 2), the tap count does not
  clear_last_error();
  EXPECT_EQ(load_and_run(file(cpufb::DType::Int8, cpufb::PoolKind::Average, {257, 257}, 0.25f, {1, 257, 257, 2})),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("at most 65536 taps"), std::string::npos) << last_error_message();
}

// DynamicQuantize of the delegate's float x [4] into int8 [4] with qparams
// [2], then QLinear of it as [1, 4] -> float y [1, 4] ... (here [1, 4] weights
// 64 bytes, 4 scales, params 2 * 16 floats): runs; refused with params one
// float short, or eps 0.
TEST_F(CpuCrafted, test_dynamic_quantize_and_qlinear_are_refused_unless_their_values_fit) {
  auto file = [&](int64_t params, float eps) {
    return cpu_file_with_workspace(one_op_payload(
        {{{4}, cpufb::Storage::Workspace, cpufb::DType::Int8},      // 2: x quantized
         {{2}, cpufb::Storage::Workspace},                          // 3: qparams
         {{64}, cpufb::Storage::Weights, cpufb::DType::Int8},       // 4: packed weights
         {{4}, cpufb::Storage::Weights},                            // 5: w_scales
         {{1, 4}, cpufb::Storage::Workspace, cpufb::DType::Int8},   // 6: x as [1, 4]
         {{1, 4}, cpufb::Storage::Output},                          // 7: y
         {{params}, cpufb::Storage::Workspace}},                    // 8: params
        64, [&](flatbuffers::FlatBufferBuilder& b) {
          return eps == 0.0f ? cpufb::CreateOpDirect(b, cpufb::OpKind::DynamicQuantize,
                                                     cpufb::CreateDynamicQuantize(b, 0, 2, 3, -128, 127, eps).Union(), "dq")
                             : cpufb::CreateOpDirect(b, cpufb::OpKind::QLinear,
                                                     cpufb::CreateQLinear(b, 6, 3, 4, 5, -1, 7, 8).Union(), "qlinear");
        }, 512));
  };
  clear_last_error();
  EXPECT_EQ(load_and_run(file(32, 1.0f)), Error::Ok) << last_error_message();
  EXPECT_EQ(load_and_run(file(31, 1.0f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("do not fit"), std::string::npos) << last_error_message();
  clear_last_error();
  EXPECT_EQ(load_and_run(file(32, 0.0f)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("eps 0 > 0 do not hold"), std::string::npos)
      << last_error_message();
}

// DynamicQuantize of the delegate's float x [4] into int8 [4] with qparams
// [2]: runs with the range [-128, 127]; refused with qmin == qmax (its scale
// would divide by qmax - qmin = 0) or qmin > qmax, naming both.
TEST_F(CpuCrafted, test_dynamic_quantize_is_refused_unless_qmin_is_below_qmax) {
  auto file = [&](int32_t qmin, int32_t qmax) {
    return cpu_file_with_workspace(one_op_payload(
        {{{4}, cpufb::Storage::Workspace, cpufb::DType::Int8},  // 2: x quantized
         {{2}, cpufb::Storage::Workspace}},                     // 3: qparams
        0, [&](flatbuffers::FlatBufferBuilder& b) {
          return cpufb::CreateOpDirect(b, cpufb::OpKind::DynamicQuantize,
                                       cpufb::CreateDynamicQuantize(b, 0, 2, 3, qmin, qmax, 1e-5f).Union(), "dq");
        }, 64));
  };
  clear_last_error();
  EXPECT_EQ(load_and_run(file(-128, 127)), Error::Ok) << last_error_message();
  for (const auto& [qmin, qmax] : {std::pair<int32_t, int32_t>{5, 5}, {-128, -128}, {3, -3}}) {
    clear_last_error();
    EXPECT_EQ(load_and_run(file(qmin, qmax)), Error::InvalidProgram) << qmin << ", " << qmax;
    const std::string range = "range [" + std::to_string(qmin) + ", " + std::to_string(qmax) + "]";
    EXPECT_NE(std::string(last_error_message()).find(range), std::string::npos) << last_error_message();
    EXPECT_NE(std::string(last_error_message()).find("qmin < qmax"), std::string::npos) << last_error_message();
  }
}

// WLinear over the delegate's x as [1, 4] -> y [1, 4], int4 weights [4, 2]
// bytes in groups of 2 with 8 scales: runs; refused with 3 bits, or groups
// of 3 (which do not divide 4 inputs).
TEST_F(CpuCrafted, test_a_wlinear_is_refused_unless_bits_and_groups_fit) {
  auto file = [&](int32_t bits, int64_t group) {
    return cpu_file_of(one_op_payload(
        {{{1, 4}, cpufb::Storage::Input}, {{1, 4}, cpufb::Storage::Output},
         {{4, 2}, cpufb::Storage::Weights, cpufb::DType::Int8}, {{8}, cpufb::Storage::Weights}},
        64, [&](flatbuffers::FlatBufferBuilder& b) {
          const auto w = cpufb::CreateWLinear(b, 2, 3, 4, 5, -1, -1, bits, group, -8);
          return cpufb::CreateOpDirect(b, cpufb::OpKind::WLinear, w.Union(), "wlinear");
        }));
  };
  clear_last_error();
  EXPECT_EQ(load_and_run(file(4, 2)), Error::Ok) << last_error_message();
  EXPECT_EQ(load_and_run(file(3, 2)), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("do not fit"), std::string::npos) << last_error_message();
  EXPECT_EQ(load_and_run(file(4, 3)), Error::InvalidProgram);
}

INSTANTIATE_TEST_SUITE_P(Files, CpuPayload, ::testing::Values("cpu_block", "cpu_ops_v2", "cpu_chain", "cpu_qs8", "cpu_qs8_ops",
                                                             "cpu_qs8_dynamic", "cpu_qs4_weight", "cpu_winograd_v5"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// Conv.winograd_element (version 5): a 1x1 Conv whose weights are a 3x3
// kernel g [oc][c][3][3], run with element t of G g G^T, which load computes
// and packs. (G g G^T)[t] at (o, k) of kernel `w` seen as [oc][c][3][3], in double:
double winograd_element_of(const std::vector<float>& w, int c, int o, int k, int t) {
  const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  double sum = 0;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) sum += G[t / 4][a] * double(w[size_t(((o * c + k) * 3 + a) * 3 + b)]) * G[t % 4][b];
  return sum;
}

flatbuffers::Offset<cpufb::Op> winograd_conv(flatbuffers::FlatBufferBuilder& b, uint32_t x, uint32_t w, uint32_t y,
                                             int32_t element, int32_t k = 1, bool depthwise = false) {
  const std::vector<int32_t> one = {1, 1}, zero = {0, 0}, kernel = {k, k};
  const float inf = std::numeric_limits<float>::infinity();
  const auto conv = cpufb::CreateConvDirect(b, x, w, -1, y, &kernel, &one, &zero, &one, depthwise,
                                            cpufb::Activation::None, -inf, inf, 0, 0, 0, 0, false, nullptr, element);
  return cpufb::CreateOpDirect(b, cpufb::OpKind::Conv, conv.Union(), "winograd_gemm");
}

// Two Convs share one 144-float kernel, read as [8][2][3][3] (x: 2 pixels of
// 2 channels -> t: 8 channels, element 5) and as [2][8][3][3] (t -> y: 2
// channels, element 10): each gets its own transform (load keys the
// transformed kernel by its channel counts, not by the value alone), and y is
// both products, as computed in double.
TEST_F(CpuCrafted, test_winograd_elements_computed_at_load_give_each_conv_its_element_of_g_g_gt) {
  const std::vector<float> kernel = test::random_floats(144, 3), x = {0.5f, -1.f, 2.f, 0.25f};
  flatbuffers::FlatBufferBuilder b;
  malformed::CpuValues values = {malformed::cpu_value(b, {4}, cpufb::Storage::Input),
                                 malformed::cpu_value(b, {4}, cpufb::Storage::Output),
                                 malformed::cpu_value(b, {1, 2, 1, 2}, cpufb::Storage::Input),
                                 malformed::cpu_value(b, {1, 2, 1, 8}, cpufb::Storage::Workspace),
                                 malformed::cpu_value(b, {1, 2, 1, 2}, cpufb::Storage::Output),
                                 malformed::cpu_value(b, {144}, cpufb::Storage::Weights)};
  std::vector<uint8_t> blob(kernel.size() * sizeof(float));
  memcpy(blob.data(), kernel.data(), blob.size());
  const malformed::CpuOps ops = {winograd_conv(b, 2, 5, 3, 5), winograd_conv(b, 3, 5, 4, 10)};
  const AlignedBytes file = cpu_file_with_workspace(malformed::cpu_payload_of(b, values, ops, 64, blob));
  LoadedProgram lp(file);
  ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
  MethodMemory mem(*lp.program, "forward", 1 << 20);
  Result<Method> m = Method::load(*lp.program, "forward", mem.manager);
  ASSERT_TRUE(m.ok()) << last_error_message();
  ASSERT_EQ(m->set_input(0, x.data(), x.size() * sizeof(float)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok) << last_error_message();
  const float* y = m->output(0).data_as<float>();
  for (int p = 0; p < 2; ++p) {
    double mid[8];
    for (int o = 0; o < 8; ++o) {
      mid[o] = 0;
      for (int k = 0; k < 2; ++k) mid[o] += winograd_element_of(kernel, 2, o, k, 5) * x[size_t(p * 2 + k)];
    }
    for (int j = 0; j < 2; ++j) {
      double want = 0;
      for (int o = 0; o < 8; ++o) want += winograd_element_of(kernel, 8, j, o, 10) * mid[o];
      EXPECT_NEAR(y[p * 2 + j], want, 1e-5 * (1 + std::fabs(want))) << "pixel " << p << " channel " << j;
    }
  }
}

// A winograd_element Conv is refused unless the element is one of 16, the
// Conv 1x1 and not depthwise, and its weights exactly the 3x3 kernel of its
// channels, in the payload (load reads them). x, y [1, 2, 1, 2]: c = oc = 2,
// a kernel of 36 floats.
TEST_F(CpuCrafted, test_a_winograd_element_conv_is_refused_unless_element_kernel_and_weights_fit) {
  struct Case {
    int32_t element, k;
    bool depthwise;
    int64_t weight_floats;
    cpufb::Storage storage;
    const char* needs;  // nullptr: it loads and runs
  };
  const Case cases[] = {
      {0, 1, false, 36, cpufb::Storage::Weights, nullptr},
      {15, 1, false, 36, cpufb::Storage::Weights, nullptr},
      {16, 1, false, 36, cpufb::Storage::Weights, "(needs t < 16)"},
      {-2, 1, false, 36, cpufb::Storage::Weights, "(needs t >= 0)"},
      {0, 3, false, 36, cpufb::Storage::Weights, "(needs g.kh == 1)"},
      {0, 1, true, 36, cpufb::Storage::Weights, "(needs !g.depthwise)"},
      {0, 1, false, 35, cpufb::Storage::Weights, "(needs w.numel == elements({g.oc, g.c, 9}))"},
      {0, 1, false, 16 * 36, cpufb::Storage::Weights, "(needs w.numel == elements({g.oc, g.c, 9}))"},
      {0, 1, false, 36, cpufb::Storage::Workspace, "its winograd kernel (value 4) must be in the payload's weights"},
  };
  for (const Case& c : cases) {
    const AlignedBytes file = cpu_file_with_workspace(one_op_payload(
        {{{1, 2, 1, 2}, cpufb::Storage::Input}, {{1, 2, 1, 2}, cpufb::Storage::Output}, {{c.weight_floats}, c.storage}},
        size_t(c.weight_floats),
        [&](flatbuffers::FlatBufferBuilder& b) { return winograd_conv(b, 2, 4, 3, c.element, c.k, c.depthwise); },
        c.storage == cpufb::Storage::Workspace ? 144 : 0));
    clear_last_error();
    const Error e = load_and_run(file);
    if (c.needs == nullptr) {
      EXPECT_EQ(e, Error::Ok) << "element " << c.element << ": " << last_error_message();
      continue;
    }
    EXPECT_EQ(e, Error::InvalidProgram) << c.needs;
    EXPECT_NE(std::string(last_error_message()).find(c.needs), std::string::npos)
        << "wanted " << c.needs << ", got " << last_error_message();
  }
}

}  // namespace
}  // namespace tern
