// The valid programs the malformed-file recipes break (malformed_files.h,
// malformed_cpu_files.h) and the byte-level helpers that patch built files;
// cpu_payload_test.cpp builds its own payloads with the same functions.
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
  int32_t op_out = -1;         // the Copy op's `out` (for debuggers: the value it ran to)
};

inline std::vector<uint8_t> cpu_payload(const CpuPayloadSpec& spec = {}) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int64_t> sizes = {4};
  std::vector<flatbuffers::Offset<cpufb::Value>> values = {
      cpufb::CreateValueDirect(b, &spec.sizes, cpufb::Storage::Input, spec.input_index, 0),
      cpufb::CreateValueDirect(b, &sizes, cpufb::Storage::Output, 0, 0)};
  const auto copy = cpufb::CreateCopy(b, spec.copy_from, 1);
  std::vector<flatbuffers::Offset<cpufb::Op>> ops = {cpufb::CreateOpDirect(b, cpufb::OpKind::Copy, copy.Union(), "copy", spec.op_out)};
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

}  // namespace malformed
}  // namespace test
}  // namespace tern
