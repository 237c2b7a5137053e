// The malformed-file recipes of the cpu backend's payloads
// (backends/cpu/loader.cpp and backends/cpu/ops/): each builds one broken
// .tern file whose delegate the cpu backend must refuse at load, or run
// without reading or writing out of bounds. Listed in malformed_files.h's
// recipes() with the others.
//
// Header-only (see program_builder.h).
#pragma once

#include <cstdint>
#include <vector>

#include "malformed_programs.h"

namespace tern {
namespace test {
namespace malformed {

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

// The Copy op's `out` (the value a debugger reads after it ran) is value 2 of 2.
inline AlignedBytes cpu_payload_op_out_out_of_range() {
  CpuPayloadSpec spec;
  spec.op_out = 2;
  return cpu_file(cpu_payload(spec));
}

// The Copy op's `out` is -2 (-1 says none).
inline AlignedBytes cpu_payload_op_out_negative() {
  CpuPayloadSpec spec;
  spec.op_out = -2;
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
// Payloads of other ops (issue 22), built with cpu_payload_of and
// cpu_delegate_file (malformed_programs.h).

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

// A BlockLinear (GGUF's Q8_0 rows read in place) whose weights value says
// [8, 34]: rows of 64 elements take 68 bytes; the kernels would read past
// the value (and the payload) at run.
inline AlignedBytes cpu_blocklinear_rows_too_short() {
  flatbuffers::FlatBufferBuilder b;
  const CpuValues values = {cpu_value(b, {2, 64}, cpufb::Storage::Input),
                            cpu_value(b, {2, 8}, cpufb::Storage::Output),
                            cpu_value(b, {8, 34}, cpufb::Storage::Weights, 0, cpufb::DType::Int8)};
  const auto bl = cpufb::CreateBlockLinear(b, 0, 2, -1, 1, 8);
  const CpuOps ops = {cpufb::CreateOpDirect(b, cpufb::OpKind::BlockLinear, bl.Union(), "mm")};
  return cpu_delegate_file(cpu_payload_of(b, values, ops, 0, std::vector<uint8_t>(8 * 34, 1)), kF32, {2, 64}, kF32,
                           {2, 8}, 0);
}
}  // namespace malformed
}  // namespace test
}  // namespace tern
