#include "runtime/executor/program.h"

#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/overflow.h"
#include "runtime/format/verify.h"
#include "schema/tern_generated.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Tern reads its little-endian file format in place and needs a little-endian host"
#endif

namespace tern {
namespace {

SegmentInfo read_segment(const uint8_t* data, const Header& h, size_t i) {
  SegmentInfo s;
  memcpy(&s, data + h.segment_table_offset + 16 * i, sizeof(s));  // little-endian host
  return s;
}

// [begin, end) and [offset, +size) share a byte; both lie inside the file
// (checked before), so offset + size does not overflow.
bool overlaps(uint64_t begin, uint64_t end, uint64_t offset, uint64_t size) {
  return begin < end && size != 0 && begin < offset + size && offset < end;
}

Error verify_segments(const uint8_t* data, const Header& h) {
  for (size_t i = 0; i < h.segment_count; ++i) {
    SegmentInfo s = read_segment(data, h, i);
    uint64_t end;
    if (s.offset % kSegmentAlignment != 0) {
      TERN_LOG_ERROR("segment %zu starts at %llu, not a multiple of %zu", i,
                     (unsigned long long)s.offset, kSegmentAlignment);
      return Error::InvalidProgram;
    }
    if (!checked_add(s.offset, s.size, &end) || end > h.file_size || s.offset < h.header_size) {
      TERN_LOG_ERROR("segment %zu [%llu, +%llu) lies outside the %llu-byte file", i,
                     (unsigned long long)s.offset, (unsigned long long)s.size,
                     (unsigned long long)h.file_size);
      return Error::InvalidProgram;
    }
    // Data is not the program: a constant or payload over the flatbuffer or
    // the segment table would be a second reading of checked bytes.
    const char* over = overlaps(s.offset, end, h.flatbuffer_offset, h.flatbuffer_size) ? "the flatbuffer"
                       : overlaps(s.offset, end, h.segment_table_offset, 16 * h.segment_count) ? "the segment table"
                                                                                                 : nullptr;
    if (over != nullptr) {
      TERN_LOG_ERROR("segment %zu [%llu, +%llu) overlaps %s", i, (unsigned long long)s.offset,
                     (unsigned long long)s.size, over);
      return Error::InvalidProgram;
    }
  }
  return Error::Ok;
}

}  // namespace

Result<Program> Program::load(DataLoader& loader) {
  size_t size = loader.size();
  TERN_ASSIGN_OR_RETURN(const uint8_t* data, loader.load(0, size));
  TERN_ASSIGN_OR_RETURN(Header h, parse_header(data, size));
  // Before anything reads the flatbuffer in place: its tables and vectors are
  // only aligned if the file's bytes are.
  if (reinterpret_cast<uintptr_t>(data) % kSegmentAlignment != 0) {
    TERN_LOG_ERROR("the file's bytes start at %p, not %zu-byte aligned: constants would be "
                   "misaligned (use an aligned buffer, FileDataLoader or MmapDataLoader)",
                   static_cast<const void*>(data), kSegmentAlignment);
    return Error::InvalidProgram;
  }

  // FlatBuffers addresses at most 2 GiB (its verifier only asserts it, in
  // debug builds): refuse a larger one here, in every build.
  if (h.flatbuffer_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    TERN_LOG_ERROR("flatbuffer_size %llu is over the %llu bytes a FlatBuffer can hold",
                   (unsigned long long)h.flatbuffer_size, (unsigned long long)(FLATBUFFERS_MAX_BUFFER_SIZE - 1));
    return Error::InvalidProgram;
  }
  const uint8_t* fb_data = data + h.flatbuffer_offset;
  uint32_t crc = crc32(fb_data, h.flatbuffer_size);
  if (crc != h.flatbuffer_crc32) {
    TERN_LOG_ERROR("checksum mismatch: the flatbuffer's CRC-32 is %08x, the header says %08x "
                   "(the file is corrupted)", crc, h.flatbuffer_crc32);
    return Error::ChecksumMismatch;
  }
  flatbuffers::Verifier::Options options;
  options.max_depth = 16;
  options.max_tables = 10000000;
  flatbuffers::Verifier verifier(fb_data, h.flatbuffer_size, options);
  if (!fb::VerifyProgramBuffer(verifier)) {
    TERN_LOG_ERROR("the flatbuffer failed FlatBuffers verification (malformed program)");
    return Error::InvalidProgram;
  }
  TERN_CHECK_OK(verify_segments(data, h));

  const fb::Program* root = fb::GetProgram(fb_data);
  if (root->methods() == nullptr || root->methods()->size() == 0) {
    TERN_LOG_ERROR("the program has no methods");
    return Error::InvalidProgram;
  }
  // The table is 8-byte aligned: the file start is 64-aligned (checked above)
  // and its offset a multiple of 8 (parse_header).
  const SegmentInfo* seg_table = reinterpret_cast<const SegmentInfo*>(data + h.segment_table_offset);
  for (const fb::Method* m : *root->methods()) {
    TERN_CHECK_OK(verify_method(*m, seg_table, h.segment_count));
  }
  TERN_CHECK_OK(verify_metadata(*root));
  TERN_CHECK_OK(verify_self_tests(*root));
  return Program(data, h, root);
}

size_t Program::num_methods() const { return root_->methods()->size(); }

const char* Program::method_name(size_t i) const {
  const flatbuffers::String* name = root_->methods()->Get(static_cast<uint32_t>(i))->name();
  return name ? name->c_str() : "";
}

const fb::Method* Program::method(const char* name) const {
  for (const fb::Method* m : *root_->methods()) {
    if (m->name() != nullptr && strcmp(m->name()->c_str(), name) == 0) return m;
  }
  return nullptr;
}

Result<MethodMeta> Program::method_meta(const char* name) const {
  const fb::Method* m = method(name);
  if (m == nullptr) {
    TERN_LOG_ERROR("the program has no method '%s'", name);
    return Error::NotFound;
  }
  return MethodMeta(m);
}

const uint8_t* Program::segment_data(size_t i) const { return data_ + read_segment(data_, header_, i).offset; }

uint64_t Program::segment_size(size_t i) const { return read_segment(data_, header_, i).size; }

const char* Program::producer() const { return root_->producer() ? root_->producer()->c_str() : ""; }

size_t Program::num_metadata() const { return root_->metadata() ? root_->metadata()->size() : 0; }

const char* Program::metadata_key(size_t i) const {
  return root_->metadata()->Get(static_cast<uint32_t>(i))->key()->c_str();
}

Span<const uint8_t> Program::metadata_value(size_t i) const {
  const flatbuffers::Vector<uint8_t>* v = root_->metadata()->Get(static_cast<uint32_t>(i))->value();
  return Span<const uint8_t>(v->data(), v->size());
}

Result<Span<const uint8_t>> Program::metadata(const char* key) const {
  const size_t len = strlen(key);
  size_t lo = 0, hi = num_metadata();  // keys sorted, unique (verify_metadata)
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const flatbuffers::String* k = root_->metadata()->Get(static_cast<uint32_t>(mid))->key();
    const int c = compare_metadata_keys(k->data(), k->size(), key, len);
    if (c == 0) return metadata_value(mid);
    if (c < 0) lo = mid + 1; else hi = mid;
  }
  TERN_LOG_ERROR("the program has no metadata '%s' (%zu keys)", key, num_metadata());
  return Error::NotFound;
}

size_t Program::num_self_tests() const { return root_->self_tests() ? root_->self_tests()->size() : 0; }

BundledTest Program::self_test(size_t i) const { return BundledTest(root_->self_tests()->Get(static_cast<uint32_t>(i))); }

}  // namespace tern
