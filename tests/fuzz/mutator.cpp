// A structure-aware mutator for .tern files (libFuzzer's
// LLVMFuzzerCustomMutator), linked into every harness.
//
// Byte-level mutations of a .tern file almost always stop at the checksum
// (the header's CRC-32 of the FlatBuffer) or at the FlatBuffers verifier,
// and never reach the semantic checks behind them. This mutator parses the
// input, finds the fields of the FlatBuffer through its reflection schema
// (schema/tern.fbs, embedded by flatc --bfbs-gen-embed), and rewrites a few of
// them with values that break assumptions: 0, 1, -1, the type's extremes,
// off-by-one, powers of two, another field's value. Fields are every scalar
// (indices, dtypes, offsets into segments and arenas, sizes, bounds, union
// tags), every vector and string length, every offset to a table, vector or
// string, and the entries of each vtable; also the header's fields and the
// segment table's offsets and sizes. Then it recomputes the checksum, so the
// mutant reaches the verifiers. Some mutations are libFuzzer's own byte-level
// ones (also checksum-fixed; one in ten not), and some edit only the tail,
// the bytes after the file that harnesses turn into input tensors
// (fuzz_util.h).
//
// Built with TERN_FUZZ_FOCUS_PAYLOAD (the fuzz_cpu_payload harness), most
// mutations go into the cpu backend's payload segments instead: the fields of
// their own FlatBuffer (backends/cpu/schema/cpu.fbs) or their raw bytes. The
// file's checksum does not cover segments.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/schema/cpu_bfbs_generated.h"
#include "backends/cpu/schema/cpu_generated.h"
#include "flatbuffers/reflection.h"
#include "fuzz_util.h"
#include "runtime/format/header.h"
#include "schema/tern_bfbs_generated.h"
#include "schema/tern_generated.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tern {
namespace fuzz {
namespace {

using Rng = std::minstd_rand;

enum class Kind : uint8_t { Int, Float, Offset, Length, VOffset, UnionTag };

struct Site {
  size_t pos;  // from the start of the mutated input
  uint8_t width;
  Kind kind;
};

uint64_t read_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void write_le(uint8_t* p, int n, uint64_t v) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Collects the sites of a verified FlatBuffer by walking it with its schema.
class Walker {
 public:
  static constexpr size_t kMaxSites = 8192;
  static constexpr uint32_t kMaxElements = 64;  // per vector: the first and last 32
  static constexpr int kMaxDepth = 12;

  Walker(const reflection::Schema& schema, const uint8_t* input, std::vector<Site>& out)
      : schema_(schema), input_(input), out_(out) {}

  void table(const reflection::Object& obj, const flatbuffers::Table* t, int depth) {
    if (t == nullptr || depth > kMaxDepth || out_.size() >= kMaxSites) return;
    const uint8_t* tp = reinterpret_cast<const uint8_t*>(t);
    const uint8_t* vtable = tp - flatbuffers::ReadScalar<flatbuffers::soffset_t>(tp);
    const uint16_t vt_size = flatbuffers::ReadScalar<uint16_t>(vtable);
    for (uint16_t k = 4; k + 2 <= vt_size; k += 2) add(vtable + k, 2, Kind::VOffset);
    for (const reflection::Field* f : *obj.fields()) {
      const uint8_t* addr = t->GetAddressOf(f->offset());
      if (addr == nullptr) continue;
      const reflection::BaseType bt = f->type()->base_type();
      if (bt == reflection::UType) {
        add(addr, 1, Kind::UnionTag);
      } else if (flatbuffers::IsScalar(bt)) {
        add(addr, flatbuffers::GetTypeSize(bt), flatbuffers::IsFloat(bt) ? Kind::Float : Kind::Int);
      } else if (bt == reflection::String) {
        add(addr, 4, Kind::Offset);
        add(addr + flatbuffers::ReadScalar<uint32_t>(addr), 4, Kind::Length);
      } else if (bt == reflection::Obj) {
        const reflection::Object* sub = schema_.objects()->Get(f->type()->index());
        if (sub->is_struct()) continue;
        add(addr, 4, Kind::Offset);
        table(*sub, t->GetPointer<const flatbuffers::Table*>(f->offset()), depth + 1);
      } else if (bt == reflection::Union) {
        add(addr, 4, Kind::Offset);
        const reflection::Object* sub = union_object(obj, *f, t);
        if (sub != nullptr) table(*sub, t->GetPointer<const flatbuffers::Table*>(f->offset()), depth + 1);
      } else if (bt == reflection::Vector) {
        add(addr, 4, Kind::Offset);
        vector(*f, addr + flatbuffers::ReadScalar<uint32_t>(addr), depth);
      }
    }
  }

 private:
  void add(const uint8_t* p, size_t width, Kind kind) {
    if (out_.size() < kMaxSites) out_.push_back(Site{static_cast<size_t>(p - input_), static_cast<uint8_t>(width), kind});
  }

  // The table type a union field holds, from its `<name>_type` tag.
  const reflection::Object* union_object(const reflection::Object& obj, const reflection::Field& f,
                                         const flatbuffers::Table* t) {
    std::string tag_name = f.name()->str() + "_type";
    const reflection::Field* tag = obj.fields()->LookupByKey(tag_name.c_str());
    if (tag == nullptr) return nullptr;
    const uint8_t value = t->GetField<uint8_t>(tag->offset(), 0);
    const reflection::Enum* e = schema_.enums()->Get(f.type()->index());
    for (const reflection::EnumVal* v : *e->values()) {
      if (v->value() == value && v->union_type() != nullptr && v->union_type()->base_type() == reflection::Obj) {
        return schema_.objects()->Get(v->union_type()->index());
      }
    }
    return nullptr;
  }

  void vector(const reflection::Field& f, const uint8_t* vec, int depth) {
    add(vec, 4, Kind::Length);
    const uint32_t n = flatbuffers::ReadScalar<uint32_t>(vec);
    const uint8_t* elems = vec + 4;
    const reflection::BaseType et = f.type()->element();
    auto picked = [n](uint32_t i) { return i < kMaxElements / 2 || i + kMaxElements / 2 >= n; };
    if (flatbuffers::IsScalar(et)) {
      const size_t w = flatbuffers::GetTypeSize(et);
      for (uint32_t i = 0; i < n; ++i) {
        if (picked(i)) add(elems + i * w, w, flatbuffers::IsFloat(et) ? Kind::Float : Kind::Int);
      }
    } else if (et == reflection::String) {
      for (uint32_t i = 0; i < n; ++i) {
        if (picked(i)) add(elems + 4 * i, 4, Kind::Offset);
      }
    } else if (et == reflection::Obj) {
      const reflection::Object* sub = schema_.objects()->Get(f.type()->index());
      if (sub->is_struct()) return;
      for (uint32_t i = 0; i < n; ++i) {
        if (!picked(i)) continue;
        const uint8_t* slot = elems + 4 * i;
        add(slot, 4, Kind::Offset);
        table(*sub, reinterpret_cast<const flatbuffers::Table*>(slot + flatbuffers::ReadScalar<uint32_t>(slot)),
              depth + 1);
      }
    }
  }

  const reflection::Schema& schema_;
  const uint8_t* input_;
  std::vector<Site>& out_;
};

const reflection::Schema& tern_schema() {
  static const reflection::Schema* s = reflection::GetSchema(tern::fb::ProgramBinarySchema::data());
  return *s;
}


// The parts of a .tern input the mutator knows about.
struct Layout {
  bool header = false;    // magic and a header that fits
  bool verified = false;  // the FlatBuffer verifies: `program` is usable
  uint64_t fb_offset = 0, fb_size = 0;
  const tern::fb::Program* program = nullptr;
  std::vector<Site> header_sites;              // header fields, segment table entries
  std::vector<std::pair<size_t, size_t>> payloads;  // (start, size) of delegate payload segments
};

Layout parse(const uint8_t* data, size_t size) {
  Layout l;
  if (size < kHeaderSizeV1 || memcmp(data, "TERN", 4) != 0) return l;
  l.header = true;
  static const struct { size_t pos; uint8_t width; } kHeaderFields[] = {
      {4, 4}, {8, 2}, {10, 2}, {16, 8}, {24, 8}, {32, 8}, {40, 8}, {48, 8}, {56, 8}};
  for (const auto& f : kHeaderFields) l.header_sites.push_back(Site{f.pos, f.width, Kind::Int});
  l.fb_offset = read_le(data + 16, 8);
  l.fb_size = read_le(data + 24, 8);
  const uint64_t table = read_le(data + 32, 8);
  const uint64_t count = read_le(data + 40, 8);
  for (uint64_t i = 0; i < count && i < 256 && table <= size && (size - table) / 16 > i; ++i) {
    l.header_sites.push_back(Site{static_cast<size_t>(table + 16 * i), 8, Kind::Offset});
    l.header_sites.push_back(Site{static_cast<size_t>(table + 16 * i + 8), 8, Kind::Length});
  }
  if (l.fb_offset > size || l.fb_size > size - l.fb_offset || l.fb_size < 8) return l;
  // Offsets inside a FlatBuffer are 4-aligned relative to its start; the
  // verifier checks alignment, so walk only buffers that start 8-aligned.
  if (l.fb_offset % 8 != 0) return l;
  flatbuffers::Verifier verifier(data + l.fb_offset, static_cast<size_t>(l.fb_size));
  if (!tern::fb::VerifyProgramBuffer(verifier)) return l;
  l.verified = true;
  l.program = tern::fb::GetProgram(data + l.fb_offset);
  if (l.program->methods() == nullptr) return l;
  for (const tern::fb::Method* m : *l.program->methods()) {
    if (m->delegates() == nullptr) continue;
    for (const tern::fb::Delegate* d : *m->delegates()) {
      const uint64_t seg = d->payload_segment();
      if (seg >= count || seg >= 256 || table > size || (size - table) / 16 <= seg) continue;
      const uint64_t off = read_le(data + table + 16 * seg, 8);
      const uint64_t n = read_le(data + table + 16 * seg + 8, 8);
      if (off <= size && n <= size - off && n > 0) l.payloads.emplace_back(off, n);
    }
  }
  return l;
}

void fix_crc(uint8_t* data, size_t size) {
  if (size < kHeaderSizeV1 || memcmp(data, "TERN", 4) != 0) return;
  const uint64_t off = read_le(data + 16, 8);
  const uint64_t n = read_le(data + 24, 8);
  if (off > size || n > size - off) return;
  write_le(data + 12, 4, crc32(data + off, static_cast<size_t>(n)));
}

uint64_t interesting(Rng& rng, const Site& s, uint64_t cur, const uint8_t* data, const std::vector<Site>& sites) {
  const int bits = 8 * s.width;
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  if (s.kind == Kind::Float) {
    static const double kFloats[] = {0.0, -0.0, 1.0, -1.0, 1e30, -1e30, 1e-40, 65504.0, 3.4e38, 1e300};
    const double d = kFloats[rng() % 10];
    uint64_t v;
    if (s.width == 4) {
      const float f = static_cast<float>(d);
      uint32_t u;
      memcpy(&u, &f, 4);
      v = u;
    } else {
      memcpy(&v, &d, 8);
    }
    if (rng() % 4 == 0) v = s.width == 4 ? 0x7fc00000u : 0x7ff8000000000000ull;  // NaN
    return v;
  }
  switch (rng() % 13) {
    case 0: return 0;
    case 1: return 1;
    case 2: return mask;                          // -1
    case 3: return mask >> 1;                     // the signed maximum
    case 4: return (mask >> 1) + 1;               // the signed minimum
    case 5: return cur + 1;
    case 6: return cur - 1;
    case 7: return cur + (rng() % 33) - 16;
    case 8: return (uint64_t(rng()) << 32) ^ rng();
    case 9: return cur << (1 + rng() % 4);
    case 10: return uint64_t(1) << (rng() % bits);
    case 11: {                                    // another field's value (an index, a count)
      const Site& o = sites[rng() % sites.size()];
      return read_le(data + o.pos, o.width);
    }
    default: return s.kind == Kind::UnionTag ? rng() % 16 : cur ^ (uint64_t(1) << (rng() % bits));
  }
}

void mutate_sites(Rng& rng, uint8_t* data, const std::vector<Site>& sites, int edits) {
  if (sites.empty()) return;
  for (int e = 0; e < edits; ++e) {
    const Site& s = sites[rng() % sites.size()];
    const uint64_t cur = read_le(data + s.pos, s.width);
    write_le(data + s.pos, s.width, interesting(rng, s, cur, data, sites));
  }
}

#ifdef TERN_FUZZ_FOCUS_PAYLOAD
const reflection::Schema& cpu_schema() {
  static const reflection::Schema* s = reflection::GetSchema(tern::backends::cpu::fb::ProgramBinarySchema::data());
  return *s;
}

// Structure-aware edits of the cpu payload at data[start, start + n).
bool mutate_payload(Rng& rng, uint8_t* data, size_t start, size_t n) {
  constexpr size_t kHeader = 16;  // "TCPU", u32 version, u64 FlatBuffer size (backends/cpu/loader.cpp)
  if (rng() % 3 == 0 || n < kHeader) {
    LLVMFuzzerMutate(data + start, n, n);  // raw bytes, size kept so the file stays laid out
    return true;
  }
  std::vector<Site> sites{{start + 4, 4, Kind::Int}, {start + 8, 8, Kind::Length}};
  const uint64_t fb_size = read_le(data + start + 8, 8);
  if (fb_size <= n - kHeader) {
    flatbuffers::Verifier verifier(data + start + kHeader, static_cast<size_t>(fb_size));
    if (tern::backends::cpu::fb::VerifyProgramBuffer(verifier)) {
      const uint8_t* root = data + start + kHeader;
      Walker w(cpu_schema(), data, sites);
      w.table(*cpu_schema().root_table(), flatbuffers::GetRoot<flatbuffers::Table>(root), 0);
    }
  }
  mutate_sites(rng, data, sites, 1 + static_cast<int>(rng() % 3));
  return true;
}
#endif

}  // namespace
}  // namespace fuzz
}  // namespace tern

using namespace tern::fuzz;

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  const size_t file = file_part_size(data, size);
  Layout l = parse(data, file);
#ifdef TERN_FUZZ_FOCUS_PAYLOAD
  if (!l.payloads.empty() && rng() % 4 != 0) {
    const auto& p = l.payloads[rng() % l.payloads.size()];
    mutate_payload(rng, data, p.first, p.second);
    return size;
  }
#endif
  const unsigned r = rng() % 16;
  if (l.header && r < 8) {
    std::vector<Site> sites;
    if (l.verified) {
      Walker w(tern_schema(), data, sites);
      w.table(*tern_schema().root_table(),
              flatbuffers::GetRoot<flatbuffers::Table>(data + l.fb_offset), 0);
    }
    if (sites.empty() || rng() % 8 == 0) sites.insert(sites.end(), l.header_sites.begin(), l.header_sites.end());
    mutate_sites(rng, data, sites, 1 + static_cast<int>(rng() % 3));
    fix_crc(data, file);
    return size;
  }
  if (r < 13) {
    const size_t n = LLVMFuzzerMutate(data, size, max_size);
    if (rng() % 10 != 0) fix_crc(data, file_part_size(data, n));
    return n;
  }
  // The tail: the inputs. A file without one gets a few random bytes first.
  if (max_size <= file) return size;
  size_t tail = size - file;
  if (tail == 0) {
    tail = 1 + rng() % std::min<size_t>(64, max_size - file);
    for (size_t i = 0; i < tail; ++i) data[file + i] = static_cast<uint8_t>(rng());
  }
  return file + LLVMFuzzerMutate(data + file, tail, max_size - file);
}
