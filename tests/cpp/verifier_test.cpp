// Program::load on untrusted bytes (runtime/executor/program.cpp,
// runtime/format/verify.cpp): every broken file gives its specific Error,
// never a crash.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "extension/data_loaders.h"
#include "runtime_test_util.h"

namespace tern {
namespace {

using namespace test;
namespace hp = test::header_pos;

// relu(x) -> y, plus a constant; one arena, one segment.
//   values: 0 x planned [4] @0, 1 y planned [4] @64, 2 c constant [4]
struct Small {
  ProgramBuilder pb;
  MethodBuilder* m;
  uint32_t x, y, c;
  Small() {
    m = &pb.method("forward");
    uint32_t arena = m->arena(128);
    x = m->planned(ScalarType::Float32, {4}, 0, arena);
    y = m->planned(ScalarType::Float32, {4}, 64, arena);
    c = m->constant<float>({4}, {1, -2, 3, -4});
    m->call("aten::relu", "", {x, y});
    m->inputs = {x};
    m->outputs = {y};
  }
};

Error load(const AlignedBytes& b) {
  BufferDataLoader loader(b.data(), b.size());
  return Program::load(loader).error();
}

// Builds Small, lets `edit` break it, loads it.
Error load_edited(const std::function<void(Small&)>& edit) {
  Small s;
  edit(s);
  return load(s.pb.build());
}

TEST(ProgramLoad, test_valid_program_loads_and_describes_itself) {
  Small s;
  LoadedProgram lp(s.pb.build());
  ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
  const Program& p = *lp.program;
  EXPECT_EQ(p.num_methods(), 1u);
  EXPECT_STREQ(p.method_name(0), "forward");
  EXPECT_NE(p.method("forward"), nullptr);
  EXPECT_EQ(p.method("backward"), nullptr);
  EXPECT_STREQ(p.producer(), "tern-tests");
  ASSERT_EQ(p.num_segments(), 1u);
  EXPECT_EQ(p.segment_size(0), 16u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.segment_data(0)) % 64, 0u);
  const float want[4] = {1, -2, 3, -4};
  EXPECT_EQ(memcmp(p.segment_data(0), want, 16), 0);
  EXPECT_GE(p.segment_data(0), lp.bytes.data()) << "zero-copy: constants point into the file";
  EXPECT_LT(p.segment_data(0), lp.bytes.data() + lp.bytes.size());
  EXPECT_EQ(p.header().file_size, lp.bytes.size());
}

TEST(ProgramLoad, test_program_with_every_value_kind_loads) {
  ProgramBuilder pb;
  pb.producer = "";
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t t = m.planned(ScalarType::Int64, {2, 2}, 0, arena);
  m.none();
  m.int_value(-3);
  m.double_value(0.5);
  m.bool_value(true);
  m.string_value("mean");
  m.int_list({1, 2, 3});
  m.double_list({});
  m.bool_list({1, 0});
  m.tensor_list({t, t});
  m.optional_tensor_list({-1, static_cast<int32_t>(t)});
  m.empty_tensor(ScalarType::Float32, {0, 3});
  m.planned(ScalarType::Bool, {}, 32, arena);  // 0-d
  m.free_value(t);
  m.inputs = {t};
  m.outputs = {t};
  EXPECT_EQ(load(pb.build()), Error::Ok) << last_error_message();
}

TEST(ProgramLoad, test_loads_through_file_and_mmap_loaders) {
  Small s;
  AlignedBytes b = s.pb.build();
  std::string path = write_temp_file(b.data(), b.size(), "tern_program");
  {
    FileDataLoader fl;
    ASSERT_EQ(fl.open(path.c_str()), Error::Ok);
    EXPECT_EQ(Program::load(fl).error(), Error::Ok);
    MmapDataLoader ml;
    ASSERT_EQ(ml.open(path.c_str()), Error::Ok);
    EXPECT_EQ(Program::load(ml).error(), Error::Ok);
  }
  unlink(path.c_str());
}

TEST(ProgramLoad, test_not_a_tern_file) {
  AlignedBytes b(256);
  memcpy(b.data(), "PK\x03\x04", 4);
  EXPECT_EQ(load(b), Error::NotATernFile);
  EXPECT_EQ(load(AlignedBytes()), Error::NotATernFile);
}

// A flatbuffer of 2 GiB: more than FlatBuffers can address, which its
// verifier only asserts (in debug builds). Refused before the checksum. The
// file is 2 GiB of untouched zero pages behind a valid header.
TEST(ProgramLoad, test_a_flatbuffer_of_2_gib_is_refused_naming_its_size) {
  const uint64_t fb_size = uint64_t(1) << 31, file_size = 64 + fb_size + 64;
  void* p = mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  uint8_t* f = static_cast<uint8_t*>(p);
  const AlignedBytes small = Small().pb.build();
  memcpy(f, small.data(), 64);
  write_le(f, hp::kFlatbufferOffset, 64, 8);
  write_le(f, hp::kFlatbufferSize, fb_size, 8);
  write_le(f, hp::kSegmentTableOffset, 64 + fb_size, 8);
  write_le(f, hp::kSegmentCount, 0, 8);
  write_le(f, hp::kFileSize, file_size, 8);
  BufferDataLoader loader(f, file_size);
  clear_last_error();
  EXPECT_EQ(Program::load(loader).error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("flatbuffer_size 2147483648 is over the 2147483646 bytes"),
            std::string::npos) << last_error_message();
  munmap(p, file_size);
}

TEST(ProgramLoad, test_newer_major_version_is_unsupported) {
  Small s;
  s.pb.version_major = 2;
  EXPECT_EQ(load(s.pb.build()), Error::UnsupportedVersion);
}

TEST(ProgramLoad, test_flipped_flatbuffer_byte_is_checksum_mismatch) {
  Small s;
  const AlignedBytes good = s.pb.build();
  uint64_t off = read_le(good, hp::kFlatbufferOffset, 8);
  uint64_t size = read_le(good, hp::kFlatbufferSize, 8);
  for (uint64_t i = off; i < off + size; ++i) {
    for (uint8_t bit : {0x01, 0x80}) {
      AlignedBytes b = good;
      b[i] ^= bit;
      ASSERT_EQ(load(b), Error::ChecksumMismatch) << "byte " << i;
    }
  }
}

TEST(ProgramLoad, test_wrong_crc_field_is_checksum_mismatch) {
  Small s;
  AlignedBytes b = s.pb.build();
  b[hp::kCrc32] ^= 1;
  EXPECT_EQ(load(b), Error::ChecksumMismatch);
}

TEST(ProgramLoad, test_every_truncation_is_an_error) {
  Small s;
  const AlignedBytes good = s.pb.build();
  for (size_t n = 0; n < good.size(); ++n) {
    AlignedBytes b(good.data(), n);  // a fresh buffer: reads past n would be caught by ASan
    Error e = load(b);
    ASSERT_EQ(e, n < 8 ? Error::NotATernFile : Error::Truncated) << "prefix of " << n << " bytes";
  }
  EXPECT_EQ(load(good), Error::Ok);
}

TEST(ProgramLoad, test_every_truncation_with_a_consistent_file_size_is_an_error) {
  // A truncated file whose header was rewritten to match: the sections, not
  // the file size, must catch it.
  Small s;
  const AlignedBytes good = s.pb.build();
  for (size_t n = 64; n < good.size(); ++n) {
    AlignedBytes b(good.data(), n);
    write_le(b, hp::kFileSize, n, 8);
    ASSERT_NE(load(b), Error::Ok) << "prefix of " << n << " bytes";
  }
}

TEST(ProgramLoad, test_flatbuffer_garbage_with_valid_crc_is_invalid_program) {
  Small s;
  AlignedBytes b = s.pb.build();
  uint64_t off = read_le(b, hp::kFlatbufferOffset, 8);
  uint64_t size = read_le(b, hp::kFlatbufferSize, 8);
  for (uint64_t i = 0; i < size; ++i) b[off + i] = static_cast<uint8_t>(i * 131 + 17);
  fix_crc(b);
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_root_offset_out_of_range_is_invalid_program) {
  Small s;
  AlignedBytes b = s.pb.build();
  uint64_t off = read_le(b, hp::kFlatbufferOffset, 8);
  write_le(b, off, 0x7FFFFFF0u, 4);
  fix_crc(b);
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_no_methods_is_invalid_program) {
  ProgramBuilder pb;
  EXPECT_EQ(load(pb.build()), Error::InvalidProgram);
}

TEST(ProgramLoad, test_method_without_name_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->has_name = false; }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_operator_without_name_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->operators[0].has_name = false; }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_argument_value_index_out_of_range_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->instructions[0].args[1] = 3; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->instructions[0].args[0] = UINT32_MAX; }),
            Error::InvalidProgram);
}

TEST(ProgramLoad, test_operator_index_out_of_range_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->instructions[0].op = 1; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->instructions[0].op = 0;
              s.m->operators.clear();
            }),
            Error::InvalidProgram);
}

TEST(ProgramLoad, test_segment_index_out_of_range_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.c].segment = 1; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->values[s.c].segment = 0;
              s.pb.segments.clear();
            }),
            Error::InvalidProgram);
}

TEST(ProgramLoad, test_constant_outside_its_segment_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.c].offset = 4; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.c].sizes = {5}; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.c].offset = UINT64_MAX - 3; }),
            Error::InvalidProgram);
}

TEST(ProgramLoad, test_planned_outside_its_arena_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].offset = 116; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].offset = UINT64_MAX - 3; }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->arena_sizes[0] = 79; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].offset = 112; }), Error::Ok)
      << "ending exactly at the arena's end is inside";
}

TEST(ProgramLoad, test_arena_index_out_of_range_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].arena = 1; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->arena_sizes.clear(); }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_tensor_byte_count_overflowing_uint64_is_invalid_program) {
  const int64_t big = int64_t(1) << 40;
  EXPECT_EQ(load_edited([&](Small& s) { s.m->values[s.y].sizes = {big, big}; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([&](Small& s) { s.m->values[s.c].sizes = {big, big}; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([&](Small& s) { s.m->values[s.y].sizes = {INT64_MAX}; }), Error::InvalidProgram);
  // No tensor beyond 2^48 bytes, even in an arena that would hold it.
  EXPECT_EQ(load_edited([&](Small& s) {
              s.m->arena_sizes[0] = uint64_t(1) << 48;
              s.m->values[s.y].sizes = {(int64_t(1) << 46) + 1};
            }),
            Error::InvalidProgram);
}

// An arena no memory holds would make an application's round-up of its size
// (MethodMeta::arena_size) wrap around; 2^48 bytes is the bound, as for tensors.
TEST(ProgramLoad, test_arena_size_above_2_48_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->arena_sizes[0] = uint64_t(1) << 48; }), Error::Ok);
  for (uint64_t size : {(uint64_t(1) << 48) + 1, UINT64_MAX - 63, UINT64_MAX}) {
    EXPECT_EQ(load_edited([&](Small& s) { s.m->arena_sizes[0] = size; }), Error::InvalidProgram) << size;
    EXPECT_NE(std::string(last_error_message()).find("arena 0: arena_sizes says " + std::to_string(size)),
              std::string::npos) << last_error_message();
  }
}

TEST(ProgramLoad, test_negative_size_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].sizes = {-1, -4}; }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_more_than_8_dims_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].sizes = {1, 1, 1, 1, 1, 1, 1, 1, 4}; }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].sizes = {1, 1, 1, 1, 1, 1, 1, 4}; }), Error::Ok);
}

TEST(ProgramLoad, test_unknown_scalar_type_or_storage_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].dtype = static_cast<fb::ScalarType>(10); }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].dtype = static_cast<fb::ScalarType>(-1); }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].storage = static_cast<fb::TensorStorage>(4); }),
            Error::InvalidProgram);
  // State (format 1.2) without a Method.state entry.
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].storage = fb::TensorStorage::State; }),
            Error::InvalidProgram);
}

// Small plus a state tensor h (format 1.2) at 16 in the arena, starting as c.
void add_state(Small& s) { s.m->state_tensor(ScalarType::Float32, {4}, 16, s.c, "hidden"); }

TEST(ProgramLoad, test_state_entries_are_checked) {
  EXPECT_EQ(load_edited(add_state), Error::Ok);
  // A State tensor without its entry, or an entry for a tensor that is not State.
  EXPECT_EQ(load_edited([](Small& s) { add_state(s); s.m->state.clear(); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { add_state(s); s.m->state.push_back({s.y, s.c, "y"}); }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              add_state(s);
              s.m->values[s.y].storage = fb::TensorStorage::State;
              s.m->state.insert(s.m->state.begin(), {s.y, s.c, "y"});
            }),
            Error::Ok) << "two state tensors, entries sorted by value";
  // Entries out of order, or one value twice (each State tensor must have exactly one).
  EXPECT_EQ(load_edited([](Small& s) {
              add_state(s);
              s.m->values[s.y].storage = fb::TensorStorage::State;
              s.m->state.push_back({s.y, s.c, "y"});
            }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              add_state(s);
              s.m->values[s.y].storage = fb::TensorStorage::State;
              s.m->state.push_back(s.m->state[0]);
            }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { add_state(s); s.m->state[0].value = 999; }), Error::InvalidProgram);
  // The initial value: in range, a constant, same dtype and sizes.
  EXPECT_EQ(load_edited([](Small& s) { add_state(s); s.m->state[0].initial = 999; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { add_state(s); s.m->state[0].initial = s.x; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              add_state(s);
              s.m->state[0].initial = s.m->constant<int32_t>({4}, {1, 2, 3, 4});
            }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              add_state(s);
              s.m->state[0].initial = s.m->constant<float>({2, 2}, {1, 2, 3, 4});
            }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { add_state(s); s.m->state[0].name = std::string(300, 'n'); }),
            Error::InvalidProgram);
  // Its bytes inside the arena, like any planned tensor.
  EXPECT_EQ(load_edited([](Small& s) {
              add_state(s);
              s.m->values[s.m->state[0].value].offset = 128;
            }),
            Error::InvalidProgram);
}

// References to size expressions (format 1.3) are checked in a method without
// dynamic shapes too: MethodMeta::input_dim_range (and the Python bindings
// through it) reads dyn_sizes of any input, one per dim.
TEST(ProgramLoad, test_size_expression_references_of_a_static_method_are_checked) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.x].dyn_sizes = {-1}; }), Error::Ok) << "static: -1";
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->values[s.x].sizes = {2, 2};
              s.m->values[s.x].dyn_sizes = {-1};
            }),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 0: 1 dynamic sizes for 2 dims"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.x].dyn_sizes = {0}; }), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 0: a dim refers to size expression 0 (0 expressions)"),
            std::string::npos) << last_error_message();
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->add(ValueSpec{});
              s.m->values.back().type = fb::Value::Int;
              s.m->values.back().expr = 3;
            }),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 3: an Int refers to size expression 3"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->int_list({1, 2});
              s.m->values.back().exprs = {-1};
            }),
            Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("value 3: 1 expressions for 2 IntList items"), std::string::npos)
      << last_error_message();
}

TEST(ProgramLoad, test_tensor_without_storage_must_be_empty) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].storage = fb::TensorStorage::None; }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->values[s.y].storage = fb::TensorStorage::None;
              s.m->values[s.y].sizes = {4, 0};
            }),
            Error::Ok);
}

TEST(ProgramLoad, test_offset_not_aligned_to_element_size_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].offset = 66; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              s.m->values[s.y].dtype = fb::ScalarType::UInt8;
              s.m->values[s.y].offset = 67;
            }),
            Error::Ok);
}

TEST(ProgramLoad, test_unknown_value_or_instruction_kind_is_invalid_program) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.c].type = static_cast<fb::Value>(42); }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->instructions[0].kind = fb::InstructionKind::NONE; }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->instructions[0].kind = static_cast<fb::InstructionKind>(9); }),
            Error::InvalidProgram);
}

TEST(ProgramLoad, test_tensor_list_items_must_be_tensors) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->tensor_list({s.x, 99}); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) {
              uint32_t i = s.m->int_value(1);
              s.m->tensor_list({i});
            }),
            Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->optional_tensor_list({-1, 0}); }), Error::Ok);
  EXPECT_EQ(load_edited([](Small& s) { s.m->optional_tensor_list({-2}); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->optional_tensor_list({INT32_MIN}); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->optional_tensor_list({50}); }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_inputs_and_outputs_must_be_tensor_values) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->inputs = {7}; }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->outputs = {s.m->int_value(3)}; }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_move_jump_and_free_indices_are_checked) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->move(s.x, 3); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->move(3, s.x); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->jump_false(3, 0); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->jump_false(s.m->bool_value(true), 3); }), Error::InvalidProgram);
  EXPECT_EQ(load_edited([](Small& s) { s.m->jump_false(s.m->bool_value(true), 2); }), Error::Ok)
      << "a jump to the end is valid";
  EXPECT_EQ(load_edited([](Small& s) { s.m->jump_false(s.m->bool_value(true), 0); }), Error::Ok)
      << "a jump back (a loop, format 1.2) is valid: the budget bounds it at run time";
  EXPECT_EQ(load_edited([](Small& s) { s.m->free_value(3); }), Error::InvalidProgram);
}

TEST(ProgramLoad, test_debug_entries_must_match_instructions) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->debug = {{"relu", "m.py:1"}}; }), Error::Ok);
  EXPECT_EQ(load_edited([](Small& s) { s.m->debug = {{"relu", ""}, {"x", ""}}; }), Error::InvalidProgram);
}

// Points the offset that refers to the vector of 8-byte `items` 4 bytes
// further, so the vector's items start only 4-aligned (FlatBuffers verifies
// the alignment of the length, not of the items). The new vector has length
// low32(items[0]) and first item high32(items[0]) | low32(items[1]) << 32.
// Returns the number of offsets changed (1 when the vector was found).
int misalign_vector(AlignedBytes& b, const std::vector<uint64_t>& items) {
  uint64_t off = read_le(b, hp::kFlatbufferOffset, 8);
  uint64_t size = read_le(b, hp::kFlatbufferSize, 8);
  std::vector<uint8_t> pattern(4 + 8 * items.size());
  write_le(pattern.data(), 0, items.size(), 4);
  for (size_t i = 0; i < items.size(); ++i) write_le(pattern.data(), 4 + 8 * i, items[i], 8);
  uint64_t vec = 0;
  for (uint64_t p = off; p + pattern.size() <= off + size; p += 4) {
    if (memcmp(b.data() + p, pattern.data(), pattern.size()) == 0) vec = p;
  }
  if (vec == 0) return 0;
  int changed = 0;
  for (uint64_t p = off; p + 4 <= off + size; p += 4) {
    if (p + read_le(b, p, 4) == vec) {
      write_le(b, p, read_le(b, p, 4) + 4, 4);
      ++changed;
    }
  }
  fix_crc(b);
  return changed;
}

uint64_t hi_lo(uint32_t hi, uint32_t lo) { return (uint64_t(hi) << 32) | lo; }

TEST(ProgramLoad, test_misaligned_tensor_sizes_are_invalid_program) {
  Small s;
  s.m->values[s.y].sizes = {int64_t(hi_lo(4, 1)), 0};  // valid: zero elements
  AlignedBytes b = s.pb.build();
  ASSERT_EQ(load(b), Error::Ok);
  ASSERT_EQ(misalign_vector(b, {hi_lo(4, 1), 0}), 1);  // now sizes [4], 4-aligned
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_misaligned_int_list_is_invalid_program) {
  Small s;
  s.m->int_list({int64_t(hi_lo(7, 1)), 0});
  AlignedBytes b = s.pb.build();
  ASSERT_EQ(load(b), Error::Ok);
  ASSERT_EQ(misalign_vector(b, {hi_lo(7, 1), 0}), 1);  // now [7], 4-aligned
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_misaligned_double_list_is_invalid_program) {
  Small s;
  uint64_t bits[2] = {hi_lo(0x3FF00000u, 1), 0};
  double d[2];
  memcpy(d, bits, sizeof(d));
  s.m->double_list({d[0], d[1]});
  AlignedBytes b = s.pb.build();
  ASSERT_EQ(load(b), Error::Ok);
  ASSERT_EQ(misalign_vector(b, {bits[0], bits[1]}), 1);
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_misaligned_arena_sizes_are_invalid_program) {
  Small s;
  s.m->arena_sizes = {hi_lo(128, 1), 0};
  AlignedBytes b = s.pb.build();
  ASSERT_EQ(load(b), Error::Ok);
  ASSERT_EQ(misalign_vector(b, {hi_lo(128, 1), 0}), 1);  // now [128], 4-aligned
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_misaligned_segment_offset_is_invalid_program) {
  Small s;
  AlignedBytes b = s.pb.build();
  size_t e = segment_entry_pos(b, 0);
  write_le(b, e, read_le(b, e, 8) + 8, 8);  // still inside the file
  write_le(b, e + 8, 8, 8);
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

TEST(ProgramLoad, test_segment_outside_file_is_invalid_program) {
  Small s;
  const AlignedBytes good = s.pb.build();
  size_t e = segment_entry_pos(good, 0);
  AlignedBytes b = good;
  write_le(b, e + 8, read_le(b, e + 8, 8) + 1, 8);  // one byte past the end
  EXPECT_EQ(load(b), Error::InvalidProgram);
  b = good;
  write_le(b, e, good.size() + 64 * 4, 8);
  EXPECT_EQ(load(b), Error::InvalidProgram);
  b = good;
  write_le(b, e, 64 * 1024, 8);
  write_le(b, e + 8, UINT64_MAX - 100, 8);  // offset + size wraps
  EXPECT_EQ(load(b), Error::InvalidProgram);
  b = good;
  write_le(b, e, 0, 8);  // inside the header
  EXPECT_EQ(load(b), Error::InvalidProgram);
}

// Segments come after the segment table: one over the flatbuffer or the
// table (64-aligned, inside the file) would read checked program bytes as data.
TEST(ProgramLoad, test_segment_over_the_flatbuffer_or_segment_table_is_invalid_program) {
  Small s;
  const AlignedBytes good = s.pb.build();
  const size_t e = segment_entry_pos(good, 0);
  ASSERT_EQ(read_le(good, hp::kFlatbufferOffset, 8), 64u);
  AlignedBytes b = good;
  write_le(b, e, 64, 8);  // the flatbuffer's first bytes
  EXPECT_EQ(load(b), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("segment 0 [64, +16) overlaps the flatbuffer"), std::string::npos)
      << last_error_message();
  // A table of 9 entries (144 bytes) has a 64-byte boundary with 16 bytes
  // of table after it, past the flatbuffer.
  Small long_table;
  for (int i = 0; i < 8; ++i) long_table.pb.add_segment({});
  b = long_table.pb.build();
  const uint64_t boundary = (segment_entry_pos(b, 0) / 64 + 1) * 64;
  ASSERT_LE(boundary + 16, segment_entry_pos(b, 9));
  write_le(b, segment_entry_pos(b, 0), boundary, 8);
  EXPECT_EQ(load(b), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("segment 0 [" + std::to_string(boundary) + ", +16) overlaps the segment table"),
            std::string::npos) << last_error_message();
  // An empty segment overlaps nothing, wherever it points.
  Small with_empty;
  with_empty.pb.add_segment({});
  b = with_empty.pb.build();
  write_le(b, segment_entry_pos(b, 1), 64, 8);
  EXPECT_EQ(load(b), Error::Ok) << last_error_message();
}

TEST(ProgramLoad, test_buffer_not_64_byte_aligned_is_invalid_program) {
  Small s;
  const AlignedBytes good = s.pb.build();
  for (size_t shift : {1, 4, 8, 32}) {
    AlignedBytes holder(good.size() + shift);
    memcpy(holder.data() + shift, good.data(), good.size());
    BufferDataLoader loader(holder.data() + shift, good.size());
    EXPECT_EQ(Program::load(loader).error(), Error::InvalidProgram) << "shift " << shift;
  }
}

TEST(ProgramLoad, test_error_messages_name_the_method_and_value) {
  EXPECT_EQ(load_edited([](Small& s) { s.m->values[s.y].offset = 116; }), Error::InvalidProgram);
  std::string msg = last_error_message();
  EXPECT_NE(msg.find("forward"), std::string::npos) << msg;
  EXPECT_NE(msg.find("value 1"), std::string::npos) << msg;
  EXPECT_EQ(load_edited([](Small& s) { s.m->instructions[0].args[1] = 3; }), Error::InvalidProgram);
  msg = last_error_message();
  EXPECT_NE(msg.find("instruction 0"), std::string::npos) << msg;
}

// A deterministic fuzz pass: mutate bytes of a richer program (fixing the CRC
// so the mutations reach the verifiers), load, and when the load succeeds, load
// the method and run it. Nothing may crash; ASan builds check the reads.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

AlignedBytes rich_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(256);
  uint32_t x = m.planned(ScalarType::Float32, {2, 2}, 0, arena);
  uint32_t t = m.planned(ScalarType::Float32, {2, 2}, 64, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2, 2}, 128, arena);
  uint32_t c = m.constant<float>({2, 2}, {1, 2, 3, 4});
  uint32_t cond = m.planned(ScalarType::Bool, {1}, 192, arena);
  uint32_t alpha = m.double_value(2.0);
  uint32_t list = m.tensor_list({x, c});
  m.int_list({1, 2});
  m.call("test::add_one", "", {x, t});
  m.call("test::positive", "", {t, cond});
  m.jump_false(cond, 4);
  m.call("test::scale", "", {t, alpha, y});
  m.call("test::sum_list", "", {list, t});
  m.move(t, y);
  m.call("aten::relu", "", {y, t});
  m.free_value(t);
  m.inputs = {x};
  m.outputs = {y, t};
  return pb.build();
}

// Arenas a test can allocate (a mutated size may be near 2^64).
bool arenas_small(const fb::Method& m) {
  for (uint64_t a : *m.arena_sizes()) {
    if (a > (uint64_t(1) << 20)) return false;
  }
  return true;
}

TEST(ProgramLoad, test_mutated_files_never_crash) {
  register_test_kernels();
  register_relu();
  set_log_level(LogLevel::Fatal);  // thousands of expected error lines
  const AlignedBytes good = rich_program();
  {
    LoadedProgram lp(rich_program());
    ASSERT_EQ(lp.error, Error::Ok) << last_error_message();
    MethodMemory mem(*lp.program, "forward");
    ASSERT_TRUE(Method::load(*lp.program, "forward", mem.manager).ok()) << last_error_message();
  }
  // TERN_FUZZ_SEED / TERN_FUZZ_ITERATIONS explore further (default: fixed, fast).
  const char* seed_env = getenv("TERN_FUZZ_SEED");
  const char* iter_env = getenv("TERN_FUZZ_ITERATIONS");
  Rng rng(seed_env ? strtoull(seed_env, nullptr, 0) : 0x7e57);
  const int iterations = iter_env ? atoi(iter_env) : 20000;
  int loaded = 0, executed = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    AlignedBytes b = good;
    int n = 1 + static_cast<int>(rng.below(4));
    for (int k = 0; k < n; ++k) {
      size_t pos = 64 + rng.below(b.size() - 64);
      b[pos] = rng.below(3) == 0 ? static_cast<uint8_t>(rng.next()) : b[pos] ^ (1u << rng.below(8));
    }
    fix_crc(b);
    LoadedProgram lp(std::move(b));
    if (lp.error != Error::Ok) continue;
    ++loaded;
    for (size_t mi = 0; mi < lp.program->num_methods(); ++mi) {
      const char* name = lp.program->method_name(mi);
      if (lp.program->method(name)->arena_sizes() && !arenas_small(*lp.program->method(name))) continue;
      MethodMemory mem(*lp.program, name);
      MethodOptions options;
      options.max_loop_instructions = 10000;  // a mutated jump may loop forever
      Result<Method> m = Method::load(*lp.program, name, mem.manager, options);
      if (!m.ok()) continue;
      (void)m->execute();
      ++executed;
    }
  }
  set_log_level(LogLevel::Info);
  // The mutations must reach past the verifiers sometimes, or this tests little.
  EXPECT_GT(loaded, iterations / 200);
  EXPECT_GT(executed, iterations / 2000);
  printf("mutated files: %d loaded, %d executed, of %d\n", loaded, executed, iterations);
}

// Dynamic shapes are a module a runtime links only when it calls
// enable_dynamic_shapes() (the core's size); until then their files are
// refused, not misread. ctest runs each test in its own process, and nothing
// in this file enables them before this test.
TEST(DynamicShapesModule, test_a_dynamic_file_is_refused_until_enabled) {
  FILE* f = fopen(TERN_TEST_DATA_DIR "/v1_3/dynamic.tern", "rb");
  ASSERT_NE(f, nullptr);
  std::vector<uint8_t> raw(1 << 20);
  raw.resize(fread(raw.data(), 1, raw.size(), f));
  fclose(f);
  {
    LoadedProgram lp(AlignedBytes(raw.data(), raw.size()));
    EXPECT_EQ(lp.error, Error::NotSupported);
    EXPECT_NE(std::string(last_error_message()).find("tern::enable_dynamic_shapes()"), std::string::npos)
        << last_error_message();
  }
  enable_dynamic_shapes();
  LoadedProgram lp(AlignedBytes(raw.data(), raw.size()));
  EXPECT_EQ(lp.error, Error::Ok) << last_error_message();
}

}  // namespace
}  // namespace tern
