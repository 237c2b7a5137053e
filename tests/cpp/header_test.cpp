// parse_header and crc32 (runtime/format/header.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "program_builder.h"
#include "runtime/format/header.h"

namespace tern {
namespace {

using namespace test;
namespace hp = test::header_pos;

// A small valid file: one method, one constant in one segment.
AlignedBytes valid_file() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t c = m.constant<float>({4}, {1, 2, 3, 4});
  m.outputs = {c};
  return pb.build();
}

Error parse(const AlignedBytes& b) { return parse_header(b.data(), b.size()).error(); }
Error parse(const AlignedBytes& b, size_t size) { return parse_header(b.data(), size).error(); }

TEST(Crc32, test_crc32_first_use_from_many_threads) {
  // Programs may be loaded on several threads at once; the first crc32 calls
  // must not race (run under TSan to check).
  const char* s = "123456789";
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (crc32(reinterpret_cast<const uint8_t*>(s), 9) != 0xCBF43926u) ++wrong;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
}

TEST(Crc32, test_crc32_matches_zlib) {
  const char* s = "123456789";
  EXPECT_EQ(crc32(reinterpret_cast<const uint8_t*>(s), 9), 0xCBF43926u);
  EXPECT_EQ(crc32(nullptr, 0), 0u);
  const uint8_t a = 'a';
  EXPECT_EQ(crc32(&a, 1), 0xE8B7BE43u);
}

TEST(ParseHeader, test_valid_header_fields_are_read) {
  AlignedBytes b = valid_file();
  Result<Header> h = parse_header(b.data(), b.size());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->header_size, 64u);
  EXPECT_EQ(h->version_major, 1);
  EXPECT_EQ(h->version_minor, kFormatVersionMinor);
  EXPECT_EQ(h->flatbuffer_offset, 64u);
  EXPECT_EQ(h->flatbuffer_size, read_le(b, hp::kFlatbufferSize, 8));
  EXPECT_EQ(h->flatbuffer_crc32, crc32(b.data() + 64, h->flatbuffer_size));
  EXPECT_EQ(h->segment_count, 1u);
  EXPECT_EQ(h->segment_table_offset % 8, 0u);
  EXPECT_EQ(h->file_size, b.size());
}

TEST(ParseHeader, test_bad_magic_is_not_a_tern_file) {
  AlignedBytes b = valid_file();
  b[0] = 'P';
  EXPECT_EQ(parse(b), Error::NotATernFile);
  b = valid_file();
  b[3] = 'n';
  EXPECT_EQ(parse(b), Error::NotATernFile);
}

TEST(ParseHeader, test_under_8_bytes_is_not_a_tern_file) {
  AlignedBytes b = valid_file();
  for (size_t n = 0; n < 8; ++n) EXPECT_EQ(parse(b, n), Error::NotATernFile) << n;
  EXPECT_EQ(parse_header(nullptr, 0).error(), Error::NotATernFile);
}

TEST(ParseHeader, test_shorter_than_header_is_truncated) {
  AlignedBytes b = valid_file();
  for (size_t n = 8; n < 64; ++n) EXPECT_EQ(parse(b, n), Error::Truncated) << n;
}

TEST(ParseHeader, test_shorter_than_file_size_is_truncated) {
  AlignedBytes b = valid_file();
  for (size_t n = 64; n < b.size(); ++n) EXPECT_EQ(parse(b, n), Error::Truncated) << n;
  EXPECT_EQ(parse(b, b.size()), Error::Ok);
}

TEST(ParseHeader, test_longer_than_file_size_is_accepted) {
  AlignedBytes b = valid_file();
  AlignedBytes longer(b.size() + 100);
  memcpy(longer.data(), b.data(), b.size());
  EXPECT_EQ(parse(longer), Error::Ok);
}

TEST(ParseHeader, test_newer_major_version_is_unsupported) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kVersionMajor, kFormatVersionMajor + 1, 2);
  EXPECT_EQ(parse(b), Error::UnsupportedVersion);
  write_le(b, hp::kVersionMajor, 0xFFFF, 2);
  EXPECT_EQ(parse(b), Error::UnsupportedVersion);
}

TEST(ParseHeader, test_major_version_zero_is_unsupported) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kVersionMajor, 0, 2);
  EXPECT_EQ(parse(b), Error::UnsupportedVersion);
}

TEST(ParseHeader, test_newer_minor_version_is_accepted) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kVersionMinor, 7, 2);
  EXPECT_EQ(parse(b), Error::Ok);
}

TEST(ParseHeader, test_header_size_below_64_is_invalid) {
  AlignedBytes b = valid_file();
  for (uint32_t hs : {0u, 8u, 32u, 63u}) {
    write_le(b, hp::kHeaderSize, hs, 4);
    EXPECT_EQ(parse(b), Error::InvalidProgram) << hs;
  }
}

TEST(ParseHeader, test_grown_header_is_accepted) {
  ProgramBuilder pb;
  pb.header_size = 128;  // a future minor version's longer header
  MethodBuilder& m = pb.method("forward");
  m.outputs = {m.constant<float>({1}, {1})};
  AlignedBytes b = pb.build();
  Result<Header> h = parse_header(b.data(), b.size());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->header_size, 128u);
  EXPECT_EQ(h->flatbuffer_offset, 128u);
}

TEST(ParseHeader, test_header_size_past_the_flatbuffer_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kHeaderSize, 72, 4);  // the flatbuffer (at 64) would overlap the header
  EXPECT_EQ(parse(b), Error::InvalidProgram);
  write_le(b, hp::kHeaderSize, 0xFFFFFFFFu, 4);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_file_size_below_header_size_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kFileSize, 40, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_flatbuffer_range_outside_file_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kFlatbufferSize, b.size(), 8);  // 64 + size > file
  EXPECT_EQ(parse(b), Error::InvalidProgram);

  b = valid_file();
  write_le(b, hp::kFlatbufferOffset, b.size() + 64, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);

  b = valid_file();  // offset + size wraps around 2^64
  write_le(b, hp::kFlatbufferOffset, UINT64_MAX - 7, 8);
  write_le(b, hp::kFlatbufferSize, 16, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);

  b = valid_file();
  write_le(b, hp::kFlatbufferSize, UINT64_MAX, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_flatbuffer_inside_header_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kFlatbufferOffset, 0, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
  write_le(b, hp::kFlatbufferOffset, 56, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_misaligned_flatbuffer_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kFlatbufferOffset, 68, 8);
  write_le(b, hp::kFlatbufferSize, 16, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_tiny_flatbuffer_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kFlatbufferSize, 4, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_segment_table_outside_file_is_invalid) {
  AlignedBytes b = valid_file();
  write_le(b, hp::kSegmentTableOffset, b.size() - 8, 8);  // 16-byte entry runs past the end
  EXPECT_EQ(parse(b), Error::InvalidProgram);

  b = valid_file();
  write_le(b, hp::kSegmentCount, b.size(), 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);

  b = valid_file();  // 16 * count overflows
  write_le(b, hp::kSegmentCount, (uint64_t(1) << 60) + 1, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);

  b = valid_file();
  write_le(b, hp::kSegmentTableOffset, UINT64_MAX - 7, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_segment_table_misaligned_or_in_header_is_invalid) {
  AlignedBytes b = valid_file();
  uint64_t t = read_le(b, hp::kSegmentTableOffset, 8);
  write_le(b, hp::kSegmentTableOffset, t + 4, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
  write_le(b, hp::kSegmentTableOffset, 16, 8);
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_segment_table_overlapping_flatbuffer_is_invalid) {
  // header.h: sections "out of range, overlapping or misaligned" are invalid.
  AlignedBytes b = valid_file();
  write_le(b, hp::kSegmentTableOffset, 64, 8);  // on top of the flatbuffer
  EXPECT_EQ(parse(b), Error::InvalidProgram);
}

TEST(ParseHeader, test_no_segments_is_accepted) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  m.outputs = {m.planned(ScalarType::Float32, {2}, 0, m.arena(64))};
  AlignedBytes b = pb.build();
  Result<Header> h = parse_header(b.data(), b.size());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->segment_count, 0u);
}

}  // namespace
}  // namespace tern
