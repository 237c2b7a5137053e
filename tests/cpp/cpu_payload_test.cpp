// The cpu backend's payload is untrusted (it is not covered by the file's
// checksum): backends/cpu/program.cpp must refuse a damaged one with an
// error, never read or write out of bounds. Mutates the payload of frozen
// files (tests/data/v1_1/cpu_block.tern: payload version 1, convolutions,
// pools, linear; cpu_ops_v2.tern: version 2, attention, grouped and
// transposed convolutions, concats; cpu_chain.tern: row chains, Conv.fuse_next)
// byte by byte and at random, loads and runs each mutant. Under
// `make test-sanitize` ASan and UBSan watch.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"
#include "runtime_test_util.h"

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

// Loads bytes as a program and its forward method; runs it once if it loads.
Error load_and_run(const AlignedBytes& bytes) {
  LoadedProgram lp(bytes);
  if (lp.error != Error::Ok) return lp.error;
  MethodMemory mem(*lp.program, "forward", 1 << 20);
  Result<Method> m = Method::load(*lp.program, "forward", mem.manager, {2});
  if (!m.ok()) return m.error();
  return m->execute();
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
    ASSERT_EQ(load_and_run(file), Error::Ok) << last_error_message();
  }

  AlignedBytes file;
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
      if (load_and_run(m) != Error::Ok) ++refused;
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
    if (load_and_run(m) != Error::Ok) ++refused;
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

INSTANTIATE_TEST_SUITE_P(Files, CpuPayload, ::testing::Values("cpu_block", "cpu_ops_v2", "cpu_chain"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace tern
