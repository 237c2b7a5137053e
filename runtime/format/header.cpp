#include "runtime/format/header.h"

#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/overflow.h"

namespace tern {
namespace {

uint16_t read_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t read_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t read_u64(const uint8_t* p) { return uint64_t(read_u32(p)) | (uint64_t(read_u32(p + 4)) << 32); }

// [offset, offset + size) lies inside [0, limit).
bool in_bounds(uint64_t offset, uint64_t size, uint64_t limit) {
  uint64_t end;
  return checked_add(offset, size, &end) && end <= limit;
}

struct Crc32Table {
  uint32_t v[256];
};

// Built at compile time: a table filled on first use would be a data race
// when programs are loaded on several threads at once.
constexpr Crc32Table make_crc32_table() {
  Crc32Table t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t.v[i] = c;
  }
  return t;
}

constexpr Crc32Table kCrc32Table = make_crc32_table();

}  // namespace

uint32_t crc32(const uint8_t* data, size_t size) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = kCrc32Table.v[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

Result<Header> parse_header(const uint8_t* data, size_t size) {
  if (size < 8 || memcmp(data, "TERN", 4) != 0) {
    TERN_LOG_ERROR("not a Tern file: the first bytes are not the magic \"TERN\"");
    return Error::NotATernFile;
  }
  if (size < kHeaderSizeV1) {
    TERN_LOG_ERROR("truncated file: %zu bytes, shorter than the %zu-byte header", size, kHeaderSizeV1);
    return Error::Truncated;
  }
  Header h;
  h.header_size = read_u32(data + 4);
  h.version_major = read_u16(data + 8);
  h.version_minor = read_u16(data + 10);
  h.flatbuffer_crc32 = read_u32(data + 12);
  h.flatbuffer_offset = read_u64(data + 16);
  h.flatbuffer_size = read_u64(data + 24);
  h.segment_table_offset = read_u64(data + 32);
  h.segment_count = read_u64(data + 40);
  h.file_size = read_u64(data + 48);

  if (h.version_major > kFormatVersionMajor) {
    TERN_LOG_ERROR("file format version %u.%u is newer than this runtime reads (%u.x): "
                   "update the runtime or export with an older Tern",
                   h.version_major, h.version_minor, kFormatVersionMajor);
    return Error::UnsupportedVersion;
  }
  if (h.version_major == 0) {
    TERN_LOG_ERROR("file format version 0.%u is not a released version", h.version_minor);
    return Error::UnsupportedVersion;
  }
  if (h.header_size < kHeaderSizeV1) {
    TERN_LOG_ERROR("header_size %u is below the minimum %zu", h.header_size, kHeaderSizeV1);
    return Error::InvalidProgram;
  }
  if (h.file_size > size) {
    TERN_LOG_ERROR("truncated file: the header's file_size is %llu bytes, have %zu",
                   (unsigned long long)h.file_size, size);
    return Error::Truncated;
  }
  if (h.file_size < h.header_size) {
    TERN_LOG_ERROR("file_size %llu is smaller than the header", (unsigned long long)h.file_size);
    return Error::InvalidProgram;
  }
  if (h.flatbuffer_offset < h.header_size ||
      !in_bounds(h.flatbuffer_offset, h.flatbuffer_size, h.file_size) || h.flatbuffer_size < 8 ||
      h.flatbuffer_offset % 8 != 0) {
    TERN_LOG_ERROR("flatbuffer [%llu, +%llu) is not an 8-aligned range inside the %llu-byte file",
                   (unsigned long long)h.flatbuffer_offset, (unsigned long long)h.flatbuffer_size,
                   (unsigned long long)h.file_size);
    return Error::InvalidProgram;
  }
  uint64_t table_bytes;
  if (!checked_mul(h.segment_count, 16, &table_bytes) ||
      !in_bounds(h.segment_table_offset, table_bytes, h.file_size) ||
      h.segment_table_offset % 8 != 0 || h.segment_table_offset < h.header_size) {
    TERN_LOG_ERROR("segment table (%llu entries at %llu) is not an 8-aligned range inside the file",
                   (unsigned long long)h.segment_count, (unsigned long long)h.segment_table_offset);
    return Error::InvalidProgram;
  }
  // Both ranges are in bounds (checked above), so the ends do not overflow.
  if (table_bytes != 0 && h.segment_table_offset < h.flatbuffer_offset + h.flatbuffer_size &&
      h.flatbuffer_offset < h.segment_table_offset + table_bytes) {
    TERN_LOG_ERROR("segment table [%llu, +%llu) overlaps the flatbuffer [%llu, +%llu)",
                   (unsigned long long)h.segment_table_offset, (unsigned long long)table_bytes,
                   (unsigned long long)h.flatbuffer_offset, (unsigned long long)h.flatbuffer_size);
    return Error::InvalidProgram;
  }
  return h;
}

}  // namespace tern
