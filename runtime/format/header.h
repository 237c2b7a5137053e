// The fixed header at the start of every .tern file.
//
// All fields are little-endian. Version 1 header (64 bytes):
//
//   offset size field
//   0      4    magic                 "TERN"
//   4      4    header_size           bytes of this header (>= 64); a reader
//                                     skips fields it does not know, so the
//                                     header can grow without breaking readers
//   8      2    version_major         1; a reader rejects a newer major
//   10     2    version_minor         1; newer minors only add optional fields
//                                     (1.1: backend calls)
//   12     4    flatbuffer_crc32      CRC-32 (zlib polynomial) of the flatbuffer
//   16     8    flatbuffer_offset     where the flatbuffer (schema/tern.fbs) starts
//   24     8    flatbuffer_size
//   32     8    segment_table_offset  8-byte aligned; segment_count entries of
//                                     {u64 offset, u64 size}, offsets from the
//                                     start of the file, each a multiple of 64
//   40     8    segment_count
//   48     8    file_size             total bytes: catches truncation early
//   56     8    reserved              0
//
//   +--------+------------+---------------+--------+--------+---
//   | header | flatbuffer | segment table | seg 0  | seg 1  | ...
//   +--------+------------+---------------+--------+--------+---
//                                         ^ 64-byte aligned
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

namespace tern {

constexpr uint16_t kFormatVersionMajor = 1;
constexpr uint16_t kFormatVersionMinor = 2;
constexpr size_t kHeaderSizeV1 = 64;
constexpr size_t kSegmentAlignment = 64;

struct Header {
  uint32_t header_size;
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t flatbuffer_crc32;
  uint64_t flatbuffer_offset;
  uint64_t flatbuffer_size;
  uint64_t segment_table_offset;
  uint64_t segment_count;
  uint64_t file_size;
};

// Parses and range-checks the header of `data` (the whole file, `size`
// bytes). Errors: NotATernFile (bad magic or under 8 bytes), Truncated (shorter
// than the header or than file_size says), UnsupportedVersion (newer major),
// InvalidProgram (sections out of range, overlapping or misaligned).
Result<Header> parse_header(const uint8_t* data, size_t size);

// CRC-32 (polynomial 0xEDB88320, as zlib.crc32).
uint32_t crc32(const uint8_t* data, size_t size);

}  // namespace tern
