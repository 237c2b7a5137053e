// The recipes of the malformed-file corpus (tests/data/malformed/): each
// builds one broken .tern file from a tiny valid program, with
// program_builder.h or by patching the built bytes (fields located through
// the generated accessors, the CRC fixed where the break is past the
// checksum). What each file must fail with is in MANIFEST.txt there, not here.
//
//   make_malformed.cpp     writes every recipe's file into the folder
//   malformed_test.cpp     checks the committed files are byte for byte what
//                          the recipes build, then loads and runs each one
//
// Adding a file: a function here, a line in kRecipes, a line in MANIFEST.txt,
// then `build/tests/cpp/make_malformed tests/data/malformed`
// (tests/data/malformed/README.md).
//
// Header-only (see program_builder.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "backends/cpu/schema/cpu_generated.h"
#include "program_builder.h"

namespace tern {
namespace test {
namespace malformed {

namespace hp = header_pos;
namespace cpufb = ::tern::backends::cpu::fb;

constexpr ScalarType kF32 = ScalarType::Float32;

// ---------------------------------------------------------------------------
// Valid programs the recipes break.

// y = x + c * alpha (aten::add.Tensor):
//   value 0 x      input, planned [4] float32 at 0 of arena 0 (128 bytes)
//   value 1 c      constant [4] float32, segment 0
//   value 2 alpha  Int 1
//   value 3 y      output, planned [4] float32 at 64
enum : uint32_t { kX = 0, kC = 1, kAlpha = 2, kY = 3 };

inline MethodBuilder& add_program(ProgramBuilder& pb) {
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128);
  m.planned(kF32, {4}, 0, arena);
  m.constant<float>({4}, {1.f, 2.f, 3.f, 4.f});
  m.int_value(1);
  m.planned(kF32, {4}, 64, arena);
  m.call("aten::add", "Tensor", {kX, kC, kAlpha, kY});
  m.inputs = {kX};
  m.outputs = {kY};
  return m;
}

inline AlignedBytes add_file() {
  ProgramBuilder pb;
  add_program(pb);
  return pb.build();
}

// A cpu backend payload (backends/cpu/schema/cpu.fbs):
//   "TCPU" | u32 version | u64 flatbuffer size | flatbuffer
// whose program copies its input 0 (value 0, [4]) to its output 0 (value 1).
struct CpuPayloadSpec {
  uint32_t version = 2;
  std::vector<int64_t> sizes = {4};  // value 0's sizes
  uint32_t input_index = 0;  // value 0's index among the delegate's inputs
  uint32_t copy_from = 0;    // the Copy op's x
  uint64_t declared_size = 0;  // the header's flatbuffer size; 0: the real one
};

inline std::vector<uint8_t> cpu_payload(const CpuPayloadSpec& spec = {}) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int64_t> sizes = {4};
  std::vector<flatbuffers::Offset<cpufb::Value>> values = {
      cpufb::CreateValueDirect(b, &spec.sizes, cpufb::Storage::Input, spec.input_index, 0),
      cpufb::CreateValueDirect(b, &sizes, cpufb::Storage::Output, 0, 0)};
  const auto copy = cpufb::CreateCopy(b, spec.copy_from, 1);
  std::vector<flatbuffers::Offset<cpufb::Op>> ops = {cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, copy.Union(), "copy")};
  b.Finish(cpufb::CreateProgramDirect(b, &values, &ops, /*num_inputs=*/1, /*num_outputs=*/1, /*workspace_bytes=*/0));
  std::vector<uint8_t> p(16 + b.GetSize());
  memcpy(p.data(), "TCPU", 4);
  write_le(p.data(), 4, spec.version, 4);
  write_le(p.data(), 8, spec.declared_size ? spec.declared_size : b.GetSize(), 8);
  memcpy(p.data() + 16, b.GetBufferPointer(), b.GetSize());
  return p;
}

// y = x through the cpu backend (delegate 0, payload in segment 0):
//   value 0 x   input, planned [4] float32 at 0 of arena 0 (128 bytes)
//   value 1 y   output, planned [4] float32 at 64
//   value 2 ws  the delegate's workspace: an empty uint8 tensor
inline MethodBuilder& cpu_program(ProgramBuilder& pb, std::vector<uint8_t> payload = cpu_payload()) {
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128);
  const uint32_t x = m.planned(kF32, {4}, 0, arena);
  const uint32_t y = m.planned(kF32, {4}, 64, arena);
  const uint32_t ws = m.empty_tensor(ScalarType::UInt8, {0});
  m.backend_call("cpu", std::move(payload), {x}, {y, ws});
  m.inputs = {x};
  m.outputs = {y};
  return m;
}

inline AlignedBytes cpu_file(std::vector<uint8_t> payload = cpu_payload()) {
  ProgramBuilder pb;
  cpu_program(pb, std::move(payload));
  return pb.build();
}

// ---------------------------------------------------------------------------
// Byte-level helpers.

inline uint64_t fb_offset(const AlignedBytes& f) { return read_le(f, hp::kFlatbufferOffset, 8); }
inline uint64_t fb_size(const AlignedBytes& f) { return read_le(f, hp::kFlatbufferSize, 8); }

inline const fb::Method& method0(const AlignedBytes& f) {
  return *fb::GetProgram(f.data() + fb_offset(f))->methods()->Get(0);
}

// Position in the file of something inside its flatbuffer.
inline size_t pos_of(const AlignedBytes& f, const void* p) {
  return static_cast<size_t>(static_cast<const uint8_t*>(p) - f.data());
}

// Position of field `vt` (a generated VT_ constant) of `table`: through the
// table's vtable, as FlatBuffers lays it out (the generated tables hide
// flatbuffers::Table::GetAddressOf). Aborts if the field is not stored.
inline size_t field_pos(const AlignedBytes& f, const void* table, flatbuffers::voffset_t vt) {
  const size_t t = pos_of(f, table);
  const size_t vtable = t - static_cast<int32_t>(read_le(f, t, 4));
  if (vt >= read_le(f, vtable, 2)) abort();
  const uint64_t off = read_le(f, vtable + vt, 2);
  if (off == 0) abort();
  return t + off;
}

// The first n bytes (the header's file_size still says the whole file).
inline AlignedBytes cut(const AlignedBytes& f, size_t n) { return AlignedBytes(f.data(), n); }

inline size_t segment_offset(const AlignedBytes& f, size_t i) { return read_le(f, segment_entry_pos(f, i), 8); }
inline size_t segment_size(const AlignedBytes& f, size_t i) { return read_le(f, segment_entry_pos(f, i) + 8, 8); }

// ---------------------------------------------------------------------------
// The header (runtime/format/header.h).

inline AlignedBytes header_truncated() { return cut(add_file(), 40); }

inline AlignedBytes header_bad_magic() {
  AlignedBytes f = add_file();
  memcpy(f.data(), "TREN", 4);
  return f;
}

inline AlignedBytes header_future_major_version() {
  ProgramBuilder pb;
  add_program(pb);
  pb.version_major = 2;
  pb.version_minor = 0;
  return pb.build();
}

inline AlignedBytes header_size_below_64() {
  AlignedBytes f = add_file();
  write_le(f, hp::kHeaderSize, 32, 4);
  return f;
}

inline AlignedBytes header_file_size_past_end() {
  AlignedBytes f = add_file();
  write_le(f, hp::kFileSize, f.size() + 4096, 8);
  return f;
}

inline AlignedBytes header_file_size_below_header() {
  AlignedBytes f = add_file();
  write_le(f, hp::kFileSize, 16, 8);
  return f;
}

// offset + size wraps around 2^64.
inline AlignedBytes header_flatbuffer_size_overflows() {
  AlignedBytes f = add_file();
  write_le(f, hp::kFlatbufferSize, ~uint64_t(0) - 7, 8);
  return f;
}

inline AlignedBytes header_segment_count_2_60() {
  AlignedBytes f = add_file();
  write_le(f, hp::kSegmentCount, uint64_t(1) << 60, 8);
  return f;
}

inline AlignedBytes header_segment_table_overlaps_flatbuffer() {
  AlignedBytes f = add_file();
  write_le(f, hp::kSegmentTableOffset, fb_offset(f) + 8, 8);
  return f;
}

// ---------------------------------------------------------------------------
// Truncated downloads: the file ends inside each section.

inline AlignedBytes truncated_in_flatbuffer() {
  AlignedBytes f = add_file();
  return cut(f, fb_offset(f) + fb_size(f) / 2);
}

inline AlignedBytes truncated_in_segment_table() {
  AlignedBytes f = add_file();
  return cut(f, segment_entry_pos(f, 0) + 8);
}

inline AlignedBytes truncated_in_constant_segment() {
  AlignedBytes f = add_file();
  return cut(f, segment_offset(f, 0) + 8);
}

inline AlignedBytes truncated_in_payload_segment() {
  AlignedBytes f = cpu_file();
  return cut(f, segment_offset(f, 0) + segment_size(f, 0) / 2);
}

// ---------------------------------------------------------------------------
// The flatbuffer.

// A byte of the producer string changed, the CRC left as it was.
inline AlignedBytes flatbuffer_crc_mismatch() {
  AlignedBytes f = add_file();
  const flatbuffers::String* producer = fb::GetProgram(f.data() + fb_offset(f))->producer();
  f[pos_of(f, producer->c_str())] ^= 0x20;
  return f;
}

// The values vector claims 2^28 items (CRC fixed).
inline AlignedBytes flatbuffer_vector_length_past_end() {
  AlignedBytes f = add_file();
  write_le(f, pos_of(f, method0(f).values()), uint64_t(1) << 28, 4);
  fix_crc(f);
  return f;
}

// ---------------------------------------------------------------------------
// The segment table.

inline AlignedBytes segment_misaligned() {
  AlignedBytes f = add_file();
  write_le(f, segment_entry_pos(f, 0), segment_offset(f, 0) + 8, 8);
  return f;
}

// offset + size wraps around 2^64.
inline AlignedBytes segment_size_overflows() {
  AlignedBytes f = add_file();
  write_le(f, segment_entry_pos(f, 0) + 8, ~uint64_t(0), 8);
  return f;
}

// Segment 0 (the constants) placed over the flatbuffer: c reads its bytes.
inline AlignedBytes segment_overlaps_flatbuffer() {
  AlignedBytes f = add_file();
  write_le(f, segment_entry_pos(f, 0), 64, 8);
  return f;
}

// ---------------------------------------------------------------------------
// Tensor values.

inline AlignedBytes tensor_size_negative() {
  ProgramBuilder pb;
  add_program(pb).values[kX].sizes = {-1};
  return pb.build();
}

// 2^32 * 2^32 elements: the product overflows int64.
inline AlignedBytes tensor_sizes_product_overflows() {
  ProgramBuilder pb;
  add_program(pb).values[kC].sizes = {int64_t(1) << 32, int64_t(1) << 32};
  return pb.build();
}

// A 0 first makes the tensor empty, but a kernel's strides multiply the
// other sizes: [0, 2^40, 2^40] would overflow them.
inline AlignedBytes tensor_zero_dim_then_huge() {
  ProgramBuilder pb;
  add_program(pb).values[kX].sizes = {0, int64_t(1) << 40, int64_t(1) << 40};
  return pb.build();
}

inline AlignedBytes tensor_rank_9() {
  ProgramBuilder pb;
  add_program(pb).values[kC].sizes = {1, 1, 1, 1, 1, 1, 1, 1, 4};
  return pb.build();
}

inline AlignedBytes tensor_unknown_dtype() {
  ProgramBuilder pb;
  add_program(pb).values[kC].dtype = static_cast<fb::ScalarType>(42);
  return pb.build();
}

// offset + 16 bytes wraps around 2^64.
inline AlignedBytes tensor_offset_plus_bytes_overflows() {
  ProgramBuilder pb;
  add_program(pb).values[kY].offset = ~uint64_t(0) - 7;
  return pb.build();
}

// [120, +16) in a 128-byte arena.
inline AlignedBytes tensor_planned_outside_arena() {
  ProgramBuilder pb;
  add_program(pb).values[kY].offset = 120;
  return pb.build();
}

inline AlignedBytes tensor_arena_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).values[kY].arena = 3;
  return pb.build();
}

// [66, +16) in a 128-byte arena: inside it, but 2 bytes past a float32 boundary.
inline AlignedBytes tensor_planned_offset_misaligned() {
  ProgramBuilder pb;
  add_program(pb).values[kY].offset = 66;
  return pb.build();
}

// [4096, +16) in a 16-byte segment.
inline AlignedBytes tensor_constant_outside_segment() {
  ProgramBuilder pb;
  add_program(pb).values[kC].offset = 4096;
  return pb.build();
}

inline AlignedBytes tensor_segment_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).values[kC].segment = 9;
  return pb.build();
}

// An arena no memory can hold (2^64 - 64 bytes); its tensors fit in it.
inline AlignedBytes arena_size_near_2_64() {
  ProgramBuilder pb;
  add_program(pb).arena_sizes[0] = ~uint64_t(0) - 63;
  return pb.build();
}

// ---------------------------------------------------------------------------
// Union tags and type confusion.

// EValue.value_type of c set to 99 (a table is there; CRC fixed).
inline AlignedBytes value_type_out_of_range() {
  AlignedBytes f = add_file();
  f[field_pos(f, method0(f).values()->Get(kC), fb::EValue::VT_VALUE_TYPE)] = 99;
  fix_crc(f);
  return f;
}

// EValue.value_type of c says Int over its Tensor table (CRC fixed).
inline AlignedBytes value_type_int_over_tensor_table() {
  AlignedBytes f = add_file();
  f[field_pos(f, method0(f).values()->Get(kC), fb::EValue::VT_VALUE_TYPE)] = static_cast<uint8_t>(fb::Value::Int);
  fix_crc(f);
  return f;
}

// aten::relu(self, out) with the Int value as self (a well-formed file;
// binary ops such as add take a Scalar for a Tensor operand, relu does not).
inline AlignedBytes kernel_arg_int_for_tensor() {
  ProgramBuilder pb;
  MethodBuilder& m = add_program(pb);
  m.operators[0] = {"aten::relu", "", true};
  m.instructions[0].args = {kAlpha, kY};
  return pb.build();
}

// Instruction.kind_type set to 9, over its KernelCall table (CRC fixed).
inline AlignedBytes instruction_kind_out_of_range() {
  AlignedBytes f = add_file();
  f[field_pos(f, method0(f).instructions()->Get(0), fb::Instruction::VT_KIND_TYPE)] = 9;
  fix_crc(f);
  return f;
}

// ---------------------------------------------------------------------------
// Indices and the instruction list.

inline AlignedBytes kernel_operator_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).instructions[0].op = 7;
  return pb.build();
}

inline AlignedBytes kernel_arg_value_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).instructions[0].args[1] = 99;
  return pb.build();
}

inline AlignedBytes unknown_operator() {
  ProgramBuilder pb;
  add_program(pb).operators[0] = {"aten::frobnicate", "Tensor", true};
  return pb.build();
}

inline AlignedBytes move_value_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).move(kY, 42);
  return pb.build();
}

// A Move between two Ints, into the add's alpha: a kernel's scalar and list
// arguments are checked at prepare, and only tensors may move.
inline AlignedBytes move_between_ints() {
  ProgramBuilder pb;
  MethodBuilder& m = add_program(pb);
  const uint32_t two = m.int_value(2);
  m.move(two, kAlpha);
  return pb.build();
}

inline AlignedBytes method_input_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).inputs = {99};
  return pb.build();
}

inline AlignedBytes method_output_index_out_of_range() {
  ProgramBuilder pb;
  add_program(pb).outputs = {kY, 99};
  return pb.build();
}

// The input is the constant: set_input would write into the file's bytes.
inline AlignedBytes method_input_is_constant() {
  ProgramBuilder pb;
  add_program(pb).inputs = {kC};
  return pb.build();
}

// Instruction 1 jumps to itself on a constant false: a loop without end.
inline AlignedBytes jump_cycle() {
  ProgramBuilder pb;
  MethodBuilder& m = add_program(pb);
  m.jump_false(m.bool_value(false), 1);
  return pb.build();
}

// A target past the end (2 instructions; 2 would be the end).
inline AlignedBytes jump_target_out_of_range() {
  ProgramBuilder pb;
  MethodBuilder& m = add_program(pb);
  m.jump_false(m.bool_value(false), 7);
  return pb.build();
}

inline AlignedBytes jump_condition_not_bool() {
  ProgramBuilder pb;
  MethodBuilder& m = add_program(pb);
  m.jump_false(kAlpha, 2);
  return pb.build();
}

// ---------------------------------------------------------------------------
// Delegates (format 1.1) and state (format 1.2).

inline AlignedBytes delegate_index_out_of_range() {
  ProgramBuilder pb;
  cpu_program(pb).instructions[0].a = 5;
  return pb.build();
}

inline AlignedBytes delegate_payload_segment_out_of_range() {
  ProgramBuilder pb;
  cpu_program(pb).delegates[0].payload_segment = 9;
  return pb.build();
}

inline AlignedBytes delegate_input_value_out_of_range() {
  ProgramBuilder pb;
  cpu_program(pb).delegates[0].inputs = {99};
  return pb.build();
}

inline AlignedBytes delegate_unknown_backend() {
  ProgramBuilder pb;
  cpu_program(pb).delegates[0].backend = "npu";
  return pb.build();
}

// add_program with a state tensor s (value 4, at 96 of the arena, initial c);
// `edit` breaks its Method.state entry.
template <typename Edit>
AlignedBytes state_file(Edit edit) {
  ProgramBuilder pb;
  MethodBuilder& m = add_program(pb);
  m.state_tensor(kF32, {4}, 96, kC, "hidden");
  edit(m.state[0]);
  return pb.build();
}

inline AlignedBytes state_value_index_out_of_range() {
  return state_file([](MethodBuilder::StateSpec& s) { s.value = 99; });
}

inline AlignedBytes state_initial_index_out_of_range() {
  return state_file([](MethodBuilder::StateSpec& s) { s.initial = 99; });
}

// ---------------------------------------------------------------------------
// Program.metadata: named byte strings beside the model.

inline AlignedBytes metadata_file(std::vector<std::pair<std::string, std::vector<uint8_t>>> metadata) {
  ProgramBuilder pb;
  add_program(pb);
  pb.metadata = std::move(metadata);
  return pb.build();
}

inline AlignedBytes metadata_key_duplicate() {
  return metadata_file({{"langid.vocab", {1, 2}}, {"langid.vocab", {3}}});
}

inline AlignedBytes metadata_key_too_long() { return metadata_file({{std::string(300, 'k'), {1}}}); }

// The value's length says 2^28 bytes, past the flatbuffer's end (CRC fixed).
inline AlignedBytes metadata_value_length_past_end() {
  AlignedBytes f = metadata_file({{"langid.vocab", {1, 2, 3, 4}}});
  const fb::Program* root = fb::GetProgram(f.data() + fb_offset(f));
  write_le(f, pos_of(f, root->metadata()->Get(0)->value()), uint64_t(1) << 28, 4);
  fix_crc(f);
  return f;
}

// ---------------------------------------------------------------------------
// Dynamic shapes (format 1.3): x's dim 0 is the symbol "batch" (1 to 4),
// through size expression 0 (push symbol 0); `edit` breaks the method.
template <typename Edit>
AlignedBytes dynamic_file(Edit edit) {
  ProgramBuilder pb;
  pb.version_minor = 3;
  MethodBuilder& m = add_program(pb);
  m.symbols.push_back({"batch", 1, 4});
  m.values[kX].dyn_sizes = {m.size_expr({1, 0})};
  edit(m);
  return pb.build();
}

inline AlignedBytes symbol_min_above_max() {
  return dynamic_file([](MethodBuilder& m) { m.symbols[0] = {"batch", 10, 2}; });
}

// The code's last opcode has no operand: evaluating it would read past the code.
inline AlignedBytes size_expr_odd_length() {
  return dynamic_file([](MethodBuilder& m) { m.size_exprs[0] = {1, 0, 0}; });
}

inline AlignedBytes size_expr_index_out_of_range() {
  return dynamic_file([](MethodBuilder& m) { m.values[kX].dyn_sizes = {5}; });
}

// ---------------------------------------------------------------------------
// cpu backend payloads (backends/cpu/loader.cpp and backends/cpu/ops/).

inline AlignedBytes cpu_payload_garbage() { return cpu_file(std::vector<uint8_t>(80, 0xA5)); }

inline AlignedBytes cpu_payload_wrong_version() {
  CpuPayloadSpec spec;
  spec.version = 99;
  return cpu_file(cpu_payload(spec));
}

// The header says the flatbuffer has 2^40 bytes.
inline AlignedBytes cpu_payload_flatbuffer_overruns() {
  CpuPayloadSpec spec;
  spec.declared_size = uint64_t(1) << 40;
  return cpu_file(cpu_payload(spec));
}

inline AlignedBytes cpu_payload_op_value_out_of_range() {
  CpuPayloadSpec spec;
  spec.copy_from = 7;
  return cpu_file(cpu_payload(spec));
}

inline AlignedBytes cpu_payload_input_index_out_of_range() {
  CpuPayloadSpec spec;
  spec.input_index = 3;
  return cpu_file(cpu_payload(spec));
}

// Value 0 of the payload is [0, 2^30, 2^30]: empty, and its other sizes
// overflow a product.
inline AlignedBytes cpu_payload_zero_dim_then_huge() {
  CpuPayloadSpec spec;
  spec.sizes = {0, int64_t(1) << 30, int64_t(1) << 30};
  return cpu_file(cpu_payload(spec));
}

// The delegate's inputs are x and a constant, its only output the
// workspace; the payload (1 input, 1 output and the workspace) would take
// the constant for its output and write into the program's bytes.
inline AlignedBytes cpu_payload_output_is_delegate_input() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(128);
  const uint32_t x = m.planned(kF32, {4}, 0, arena);
  const uint32_t c = m.constant<float>({4}, {1.f, 2.f, 3.f, 4.f});
  const uint32_t ws = m.empty_tensor(ScalarType::UInt8, {0});
  m.backend_call("cpu", cpu_payload(), {x, c}, {ws});
  m.inputs = {x};
  m.outputs = {x};
  return pb.build();
}

// ---------------------------------------------------------------------------
// cpu payloads of other ops (issue 22): a program built by `ops` on a
// FlatBufferBuilder, then its weights blob (the Weights values' bytes, at
// 64-byte offsets after the flatbuffer), in a method whose delegate reads
// x and writes y and a workspace of `workspace` bytes (all planned).

using CpuOps = std::vector<flatbuffers::Offset<cpufb::Op>>;
using CpuValues = std::vector<flatbuffers::Offset<cpufb::Value>>;

inline flatbuffers::Offset<cpufb::Value> cpu_value(flatbuffers::FlatBufferBuilder& b, std::vector<int64_t> sizes,
                                                   cpufb::Storage storage, uint64_t offset = 0,
                                                   cpufb::DType dtype = cpufb::DType::Float32) {
  return cpufb::CreateValueDirect(b, &sizes, storage, 0, offset, dtype);
}

inline std::vector<uint8_t> cpu_payload_of(flatbuffers::FlatBufferBuilder& b, const CpuValues& values,
                                           const CpuOps& ops, uint64_t workspace, const std::vector<uint8_t>& blob) {
  b.Finish(cpufb::CreateProgramDirect(b, &values, &ops, /*num_inputs=*/1, /*num_outputs=*/1, workspace));
  const size_t blob_at = (16 + b.GetSize() + 63) / 64 * 64;
  std::vector<uint8_t> p(blob_at + blob.size());
  memcpy(p.data(), "TCPU", 4);
  write_le(p.data(), 4, 3, 4);  // version 3: int8 values and ops
  write_le(p.data(), 8, b.GetSize(), 8);
  memcpy(p.data() + 16, b.GetBufferPointer(), b.GetSize());
  if (!blob.empty()) memcpy(p.data() + blob_at, blob.data(), blob.size());
  return p;
}

inline AlignedBytes cpu_delegate_file(std::vector<uint8_t> payload, ScalarType x_dtype, std::vector<int64_t> x_sizes,
                                      ScalarType y_dtype, std::vector<int64_t> y_sizes, uint64_t workspace) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  const uint32_t arena = m.arena(4096);
  const uint32_t x = m.planned(x_dtype, std::move(x_sizes), 0, arena);
  const uint32_t y = m.planned(y_dtype, std::move(y_sizes), 1024, arena);
  const uint32_t ws = workspace ? m.planned(ScalarType::UInt8, {int64_t(workspace)}, 2048, arena)
                                : m.empty_tensor(ScalarType::UInt8, {0});
  m.backend_call("cpu", std::move(payload), {x}, {y, ws});
  m.inputs = {x};
  m.outputs = {y};
  return pb.build();
}

inline flatbuffers::Offset<cpufb::Op> cpu_pool_op(flatbuffers::FlatBufferBuilder& b, uint32_t x, uint32_t y,
                                                  std::vector<int32_t> kernel, std::vector<int32_t> padding) {
  const std::vector<int32_t> stride = {1, 1};
  const auto pool = cpufb::CreatePoolDirect(b, x, y, cpufb::PoolKind::Max, &kernel, &stride, &padding);
  return cpufb::CreateOpDirect(b, cpufb::OpKind::Pool, pool.Union(), "max_pool");
}

// Max pooling (kernel 2, padding 1) over an input of height 0: its one row of
// windows has no tap inside the input.
inline AlignedBytes cpu_pool_max_empty_height() {
  flatbuffers::FlatBufferBuilder b;
  const CpuValues values = {cpu_value(b, {1, 0, 4, 2}, cpufb::Storage::Input),
                            cpu_value(b, {1, 1, 5, 2}, cpufb::Storage::Output)};
  const CpuOps ops = {cpu_pool_op(b, 0, 1, {2, 2}, {1, 1})};
  return cpu_delegate_file(cpu_payload_of(b, values, ops, 0, {}), kF32, {1, 0, 4, 2}, kF32, {1, 1, 5, 2}, 0);
}

// Max pooling whose output (workspace bytes [32, 48)) lies over its input
// ([0, 64)); the float pool kernel declares its pointers __restrict.
inline AlignedBytes cpu_pool_output_overlaps_input() {
  flatbuffers::FlatBufferBuilder b;
  const CpuValues values = {cpu_value(b, {1, 2, 2, 4}, cpufb::Storage::Input),
                            cpu_value(b, {1, 1, 1, 4}, cpufb::Storage::Output),
                            cpu_value(b, {1, 2, 2, 4}, cpufb::Storage::Workspace, 0),
                            cpu_value(b, {1, 1, 1, 4}, cpufb::Storage::Workspace, 32)};
  const CpuOps ops = {cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, cpufb::CreateCopy(b, 0, 2).Union(), "in"),
                      cpu_pool_op(b, 2, 3, {2, 2}, {0, 0}),
                      cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, cpufb::CreateCopy(b, 3, 1).Union(), "out")};
  return cpu_delegate_file(cpu_payload_of(b, values, ops, 64, {}), kF32, {1, 2, 2, 4}, kF32, {1, 1, 1, 4}, 64);
}

// A 1x1 int8 convolution, 4 -> 1 channels: x int8 [1, 1, 1, 4] (input),
// y int8 [1, 1, 1, 1] (output), 64 bytes of packed weights (one panel of
// 16 columns), one w_scale; weights_at: their storage (Weights at 0, or the
// workspace's 64 bytes).
inline AlignedBytes cpu_qconv(float x_scale, float w_scale, float y_scale, cpufb::Storage weights_at) {
  flatbuffers::FlatBufferBuilder b;
  const auto i8 = cpufb::DType::Int8;
  const CpuValues values = {cpu_value(b, {1, 1, 1, 4}, cpufb::Storage::Input, 0, i8),
                            cpu_value(b, {1, 1, 1, 1}, cpufb::Storage::Output, 0, i8),
                            cpu_value(b, {64}, weights_at, 0, i8),
                            cpu_value(b, {1}, cpufb::Storage::Weights, 64)};
  const std::vector<int32_t> ones = {1, 1}, zeros = {0, 0};
  const auto qconv = cpufb::CreateQConvDirect(b, 0, 2, 3, -1, 1, &ones, &ones, &zeros, &ones, false, x_scale, 0,
                                              y_scale, 0);
  const CpuOps ops = {cpufb::CreateOpDirect(b, cpufb::OpKind::QConv, qconv.Union(), "qconv")};
  std::vector<uint8_t> blob(128, 1);
  memcpy(blob.data() + 64, &w_scale, 4);
  const uint64_t workspace = weights_at == cpufb::Storage::Workspace ? 64 : 0;
  return cpu_delegate_file(cpu_payload_of(b, values, ops, workspace, blob), ScalarType::Int8, {1, 1, 1, 4},
                           ScalarType::Int8, {1, 1, 1, 1}, workspace);
}

// Every scale finite, but x_scale * w_scale / y_scale = 1e90: a NaN reached
// the conversion to int8 (a zero accumulator times inf).
inline AlignedBytes cpu_qconv_requant_overflows() { return cpu_qconv(1e30f, 1e30f, 1e-30f, cpufb::Storage::Weights); }

// The packed weights in the workspace: load would sum bytes nobody has written.
inline AlignedBytes cpu_qconv_weights_in_workspace() {
  return cpu_qconv(0.5f, 0.25f, 1.0f, cpufb::Storage::Workspace);
}

// An int8 add whose operands dequantize past float's range (255 * 3e38).
inline AlignedBytes cpu_qbinary_scales_overflow() {
  flatbuffers::FlatBufferBuilder b;
  const auto i8 = cpufb::DType::Int8;
  const CpuValues values = {cpu_value(b, {4}, cpufb::Storage::Input, 0, i8),
                            cpu_value(b, {4}, cpufb::Storage::Output, 0, i8)};
  const auto add = cpufb::CreateQBinary(b, 0, 0, 1, cpufb::BinaryKind::Add, 3e38f, 0, 3e38f, 0, 1.0f, 0);
  const CpuOps ops = {cpufb::CreateOpDirect(b, cpufb::OpKind::QBinary, add.Union(), "qadd")};
  return cpu_delegate_file(cpu_payload_of(b, values, ops, 0, {}), ScalarType::Int8, {4}, ScalarType::Int8, {4}, 0);
}

// ---------------------------------------------------------------------------

struct Recipe {
  const char* file;
  AlignedBytes (*build)();
};

inline const std::vector<Recipe>& recipes() {
  static const std::vector<Recipe> kRecipes = {
      {"header_truncated.tern", header_truncated},
      {"header_bad_magic.tern", header_bad_magic},
      {"header_future_major_version.tern", header_future_major_version},
      {"header_size_below_64.tern", header_size_below_64},
      {"header_file_size_past_end.tern", header_file_size_past_end},
      {"header_file_size_below_header.tern", header_file_size_below_header},
      {"header_flatbuffer_size_overflows.tern", header_flatbuffer_size_overflows},
      {"header_segment_count_2_60.tern", header_segment_count_2_60},
      {"header_segment_table_overlaps_flatbuffer.tern", header_segment_table_overlaps_flatbuffer},
      {"truncated_in_flatbuffer.tern", truncated_in_flatbuffer},
      {"truncated_in_segment_table.tern", truncated_in_segment_table},
      {"truncated_in_constant_segment.tern", truncated_in_constant_segment},
      {"truncated_in_payload_segment.tern", truncated_in_payload_segment},
      {"flatbuffer_crc_mismatch.tern", flatbuffer_crc_mismatch},
      {"flatbuffer_vector_length_past_end.tern", flatbuffer_vector_length_past_end},
      {"segment_misaligned.tern", segment_misaligned},
      {"segment_size_overflows.tern", segment_size_overflows},
      {"segment_overlaps_flatbuffer.tern", segment_overlaps_flatbuffer},
      {"tensor_size_negative.tern", tensor_size_negative},
      {"tensor_sizes_product_overflows.tern", tensor_sizes_product_overflows},
      {"tensor_zero_dim_then_huge.tern", tensor_zero_dim_then_huge},
      {"tensor_rank_9.tern", tensor_rank_9},
      {"tensor_unknown_dtype.tern", tensor_unknown_dtype},
      {"tensor_offset_plus_bytes_overflows.tern", tensor_offset_plus_bytes_overflows},
      {"tensor_planned_outside_arena.tern", tensor_planned_outside_arena},
      {"tensor_arena_index_out_of_range.tern", tensor_arena_index_out_of_range},
      {"tensor_planned_offset_misaligned.tern", tensor_planned_offset_misaligned},
      {"tensor_constant_outside_segment.tern", tensor_constant_outside_segment},
      {"tensor_segment_index_out_of_range.tern", tensor_segment_index_out_of_range},
      {"arena_size_near_2_64.tern", arena_size_near_2_64},
      {"value_type_out_of_range.tern", value_type_out_of_range},
      {"value_type_int_over_tensor_table.tern", value_type_int_over_tensor_table},
      {"kernel_arg_int_for_tensor.tern", kernel_arg_int_for_tensor},
      {"instruction_kind_out_of_range.tern", instruction_kind_out_of_range},
      {"kernel_operator_index_out_of_range.tern", kernel_operator_index_out_of_range},
      {"kernel_arg_value_index_out_of_range.tern", kernel_arg_value_index_out_of_range},
      {"unknown_operator.tern", unknown_operator},
      {"move_value_index_out_of_range.tern", move_value_index_out_of_range},
      {"move_between_ints.tern", move_between_ints},
      {"method_input_index_out_of_range.tern", method_input_index_out_of_range},
      {"method_output_index_out_of_range.tern", method_output_index_out_of_range},
      {"method_input_is_constant.tern", method_input_is_constant},
      {"jump_cycle.tern", jump_cycle},
      {"jump_target_out_of_range.tern", jump_target_out_of_range},
      {"jump_condition_not_bool.tern", jump_condition_not_bool},
      {"delegate_index_out_of_range.tern", delegate_index_out_of_range},
      {"delegate_payload_segment_out_of_range.tern", delegate_payload_segment_out_of_range},
      {"delegate_input_value_out_of_range.tern", delegate_input_value_out_of_range},
      {"delegate_unknown_backend.tern", delegate_unknown_backend},
      {"state_value_index_out_of_range.tern", state_value_index_out_of_range},
      {"state_initial_index_out_of_range.tern", state_initial_index_out_of_range},
      {"metadata_key_duplicate.tern", metadata_key_duplicate},
      {"metadata_key_too_long.tern", metadata_key_too_long},
      {"metadata_value_length_past_end.tern", metadata_value_length_past_end},
      {"symbol_min_above_max.tern", symbol_min_above_max},
      {"size_expr_odd_length.tern", size_expr_odd_length},
      {"size_expr_index_out_of_range.tern", size_expr_index_out_of_range},
      {"cpu_payload_garbage.tern", cpu_payload_garbage},
      {"cpu_payload_wrong_version.tern", cpu_payload_wrong_version},
      {"cpu_payload_flatbuffer_overruns.tern", cpu_payload_flatbuffer_overruns},
      {"cpu_payload_op_value_out_of_range.tern", cpu_payload_op_value_out_of_range},
      {"cpu_payload_input_index_out_of_range.tern", cpu_payload_input_index_out_of_range},
      {"cpu_payload_zero_dim_then_huge.tern", cpu_payload_zero_dim_then_huge},
      {"cpu_payload_output_is_delegate_input.tern", cpu_payload_output_is_delegate_input},
      {"cpu_pool_max_empty_height.tern", cpu_pool_max_empty_height},
      {"cpu_pool_output_overlaps_input.tern", cpu_pool_output_overlaps_input},
      {"cpu_qconv_requant_overflows.tern", cpu_qconv_requant_overflows},
      {"cpu_qconv_weights_in_workspace.tern", cpu_qconv_weights_in_workspace},
      {"cpu_qbinary_scales_overflow.tern", cpu_qbinary_scales_overflow},
  };
  return kRecipes;
}

}  // namespace malformed
}  // namespace test
}  // namespace tern
