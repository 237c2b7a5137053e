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
// The valid programs they start from and the byte helpers are in
// malformed_programs.h; the cpu backend's payload recipes in
// malformed_cpu_files.h.
//
// Adding a file: a function here (or in malformed_cpu_files.h), a line in
// kRecipes, a line in MANIFEST.txt, then
// `build/tests/cpp/make_malformed tests/data/malformed`
// (tests/data/malformed/README.md).
//
// Header-only (see program_builder.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "malformed_cpu_files.h"
#include "malformed_programs.h"

namespace tern {
namespace test {
namespace malformed {

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
// Program.self_tests: bundled test inputs and expected outputs of add_program
// (y = x + [1, 2, 3, 4]); `edit` breaks the one test.

inline ProgramBuilder::SelfTestSpec add_self_test() {
  ProgramBuilder::SelfTestSpec t;
  t.inputs = {ProgramBuilder::floats({4}, {0.5f, -1.f, 2.f, 0.f})};
  t.expected = {ProgramBuilder::floats({4}, {1.5f, 1.f, 5.f, 4.f})};
  t.rtol = {1e-4};
  t.atol = {1e-5};
  return t;
}

template <typename Edit>
AlignedBytes self_test_file(Edit edit) {
  ProgramBuilder pb;
  add_program(pb);
  pb.self_tests = {add_self_test()};
  edit(pb.self_tests[0]);
  return pb.build();
}

using SelfTestSpec = ProgramBuilder::SelfTestSpec;

inline AlignedBytes self_test_count_65() {
  ProgramBuilder pb;
  add_program(pb);
  pb.self_tests.assign(65, add_self_test());
  return pb.build();
}

inline AlignedBytes self_test_without_method() {
  return self_test_file([](SelfTestSpec& t) { t.has_method = false; });
}

// 1025 inputs: one table referred to 1025 times, so the file stays small.
inline AlignedBytes self_test_1025_inputs() {
  return self_test_file([](SelfTestSpec& t) { t.repeat_first_input = 1025; });
}

inline AlignedBytes self_test_input_unknown_dtype() {
  return self_test_file([](SelfTestSpec& t) { t.inputs[0].dtype = static_cast<ScalarType>(42); });
}

inline AlignedBytes self_test_input_rank_9() {
  return self_test_file([](SelfTestSpec& t) { t.inputs[0].sizes = {1, 1, 1, 1, 1, 1, 1, 1, 4}; });
}

inline AlignedBytes self_test_expected_size_negative() {
  return self_test_file([](SelfTestSpec& t) { t.expected[0].sizes = {-4}; });
}

// 2^40 x 2^40 float32s: the product overflows before it is compared with the data.
inline AlignedBytes self_test_expected_sizes_overflow() {
  return self_test_file([](SelfTestSpec& t) { t.expected[0].sizes = {int64_t(1) << 40, int64_t(1) << 40}; });
}

// 12 bytes for a [4] float32 (16): one element short.
inline AlignedBytes self_test_expected_data_short() {
  return self_test_file([](SelfTestSpec& t) { t.expected[0].data.resize(12); });
}

inline AlignedBytes self_test_rtol_missing() {
  return self_test_file([](SelfTestSpec& t) { t.rtol.clear(); });
}

inline AlignedBytes self_test_atol_negative() {
  return self_test_file([](SelfTestSpec& t) { t.atol = {-1.0}; });
}

// A NaN tolerance would pass anything.
inline AlignedBytes self_test_rtol_nan() {
  return self_test_file([](SelfTestSpec& t) { t.rtol = {std::nan("")}; });
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
      {"self_test_count_65.tern", self_test_count_65},
      {"self_test_without_method.tern", self_test_without_method},
      {"self_test_1025_inputs.tern", self_test_1025_inputs},
      {"self_test_input_unknown_dtype.tern", self_test_input_unknown_dtype},
      {"self_test_input_rank_9.tern", self_test_input_rank_9},
      {"self_test_expected_size_negative.tern", self_test_expected_size_negative},
      {"self_test_expected_sizes_overflow.tern", self_test_expected_sizes_overflow},
      {"self_test_expected_data_short.tern", self_test_expected_data_short},
      {"self_test_rtol_missing.tern", self_test_rtol_missing},
      {"self_test_atol_negative.tern", self_test_atol_negative},
      {"self_test_rtol_nan.tern", self_test_rtol_nan},
      {"symbol_min_above_max.tern", symbol_min_above_max},
      {"size_expr_odd_length.tern", size_expr_odd_length},
      {"size_expr_index_out_of_range.tern", size_expr_index_out_of_range},
      {"cpu_payload_garbage.tern", cpu_payload_garbage},
      {"cpu_payload_wrong_version.tern", cpu_payload_wrong_version},
      {"cpu_payload_flatbuffer_overruns.tern", cpu_payload_flatbuffer_overruns},
      {"cpu_payload_op_value_out_of_range.tern", cpu_payload_op_value_out_of_range},
      {"cpu_payload_op_out_out_of_range.tern", cpu_payload_op_out_out_of_range},
      {"cpu_payload_op_out_negative.tern", cpu_payload_op_out_negative},
      {"cpu_payload_input_index_out_of_range.tern", cpu_payload_input_index_out_of_range},
      {"cpu_payload_zero_dim_then_huge.tern", cpu_payload_zero_dim_then_huge},
      {"cpu_payload_output_is_delegate_input.tern", cpu_payload_output_is_delegate_input},
      {"cpu_pool_max_empty_height.tern", cpu_pool_max_empty_height},
      {"cpu_pool_output_overlaps_input.tern", cpu_pool_output_overlaps_input},
      {"cpu_qconv_requant_overflows.tern", cpu_qconv_requant_overflows},
      {"cpu_qconv_weights_in_workspace.tern", cpu_qconv_weights_in_workspace},
      {"cpu_qbinary_scales_overflow.tern", cpu_qbinary_scales_overflow},
      {"cpu_blocklinear_rows_too_short.tern", cpu_blocklinear_rows_too_short},
  };
  return kRecipes;
}

}  // namespace malformed
}  // namespace test
}  // namespace tern
