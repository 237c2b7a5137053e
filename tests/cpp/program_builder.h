// Builds complete .tern files in memory, for the runtime's tests.
//
//   ProgramBuilder pb;
//   MethodBuilder& m = pb.method("forward");
//   uint32_t arena = m.arena(256);
//   uint32_t x = m.planned(ScalarType::Float32, {4}, /*offset=*/0, arena);
//   uint32_t y = m.planned(ScalarType::Float32, {4}, 64, arena);
//   m.call("aten::relu", "", {x, y});          // args in ATen schema order, then outs
//   m.inputs = {x};
//   m.outputs = {y};
//   AlignedBytes file = pb.build();             // header | flatbuffer | table | segments
//   BufferDataLoader loader(file.data(), file.size());
//   Result<Program> program = Program::load(loader);
//
// The builder writes what it is told, without checking it: tests describe
// broken files by setting fields directly (an argument index past the values,
// a tensor offset outside its arena) or by patching the built bytes with
// write_le() and fix_crc(). Layout written (runtime/format/header.h):
//
//   [0, 64)          header, version 1.1, header_size 64 (options can change these)
//   [64, ...)        flatbuffer (root: fb::Program), 8-aligned
//   8-aligned        segment table: {u64 offset, u64 size} per segment
//   64-aligned       each segment; the file ends where the last segment ends
//
// Header-only: the tests' CMake glob builds each *_test.cpp as its own binary.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/scalar_type.h"
#include "runtime/format/header.h"
#include "schema/tern_generated.h"

namespace tern {

// gtest prints an Error by name ("InvalidProgram"), not as a byte.
inline void PrintTo(Error e, std::ostream* os) { *os << error_name(e); }

namespace test {

// Bytes whose storage starts on a 64-byte boundary (Program::load rejects file
// bytes that do not). Copyable; an empty buffer still has a non-null data().
class AlignedBytes {
 public:
  AlignedBytes() : AlignedBytes(0) {}
  // Exactly `size` bytes (at least 1), so that ASan catches a read past the end.
  explicit AlignedBytes(size_t size) : size_(size) {
    void* p = nullptr;
    if (posix_memalign(&p, 64, size ? size : 1) != 0) abort();
    data_ = static_cast<uint8_t*>(p);
    memset(data_, 0, size ? size : 1);
  }
  AlignedBytes(const void* data, size_t size) : AlignedBytes(size) {
    if (size) memcpy(data_, data, size);
  }
  AlignedBytes(const AlignedBytes& o) : AlignedBytes(o.data_, o.size_) {}
  AlignedBytes(AlignedBytes&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  AlignedBytes& operator=(AlignedBytes o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~AlignedBytes() { free(data_); }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  uint8_t& operator[](size_t i) { return data_[i]; }
  uint8_t operator[](size_t i) const { return data_[i]; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Byte positions of the header fields (runtime/format/header.h).
namespace header_pos {
constexpr size_t kMagic = 0;
constexpr size_t kHeaderSize = 4;         // u32
constexpr size_t kVersionMajor = 8;       // u16
constexpr size_t kVersionMinor = 10;      // u16
constexpr size_t kCrc32 = 12;             // u32
constexpr size_t kFlatbufferOffset = 16;  // u64
constexpr size_t kFlatbufferSize = 24;    // u64
constexpr size_t kSegmentTableOffset = 32;
constexpr size_t kSegmentCount = 40;
constexpr size_t kFileSize = 48;
}  // namespace header_pos

// Little-endian integer of `n` bytes at `pos`.
inline uint64_t read_le(const uint8_t* p, size_t pos, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[pos + i];
  return v;
}
inline void write_le(uint8_t* p, size_t pos, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[pos + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t read_le(const AlignedBytes& b, size_t pos, int n) { return read_le(b.data(), pos, n); }
inline void write_le(AlignedBytes& b, size_t pos, uint64_t v, int n) { write_le(b.data(), pos, v, n); }

// Recomputes the header's CRC-32 after a test edited the flatbuffer bytes.
inline void fix_crc(uint8_t* file) {
  uint64_t off = read_le(file, header_pos::kFlatbufferOffset, 8);
  uint64_t size = read_le(file, header_pos::kFlatbufferSize, 8);
  write_le(file, header_pos::kCrc32, crc32(file + off, size), 4);
}
inline void fix_crc(AlignedBytes& b) { fix_crc(b.data()); }

// Where segment i's {offset, size} entry is in the file.
inline size_t segment_entry_pos(const AlignedBytes& b, size_t i) {
  return read_le(b, header_pos::kSegmentTableOffset, 8) + 16 * i;
}

// A value of a method, as the file will describe it.
struct ValueSpec {
  fb::Value type = fb::Value::NONE;
  // Tensor
  fb::ScalarType dtype = fb::ScalarType::Float32;
  std::vector<int64_t> sizes;
  fb::TensorStorage storage = fb::TensorStorage::None;
  uint32_t segment = 0;
  uint32_t arena = 0;
  uint64_t offset = 0;
  std::vector<int32_t> dyn_sizes;  // format 1.3: per dim, a size expression or -1
  // scalars and lists
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<uint8_t> bools;
  std::vector<uint32_t> tensors;
  std::vector<int32_t> optional_tensors;
  int32_t expr = -1;            // format 1.3: Int.expr
  std::vector<int32_t> exprs;   // format 1.3: IntList.exprs
};

struct InstructionSpec {
  fb::InstructionKind kind = fb::InstructionKind::NONE;
  uint32_t op = 0;             // KernelCall
  std::vector<uint32_t> args;  // KernelCall
  uint32_t a = 0;              // Move: from; JumpFalse: cond; Free: value; BackendCall: delegate
  uint32_t b = 0;              // Move: to;   JumpFalse: target
};

// A delegate (format 1.1): a subgraph handed to a backend.
struct DelegateSpec {
  std::string backend;
  uint32_t payload_segment = 0;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  bool has_backend = true;  // false: write a delegate without a backend name (invalid)
};

struct OperatorSpec {
  std::string name;
  std::string overload;
  bool has_name = true;  // false: write an operator without a name (invalid)
};

class ProgramBuilder;

// One method. Helpers append and return the new value's (or instruction's)
// index; the public fields can be edited directly to describe a broken file.
class MethodBuilder {
 public:
  MethodBuilder(ProgramBuilder* program, std::string method_name)
      : name(std::move(method_name)), program_(program) {}

  std::string name;
  bool has_name = true;
  std::vector<ValueSpec> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<InstructionSpec> instructions;
  std::vector<OperatorSpec> operators;
  std::vector<uint64_t> arena_sizes;
  std::vector<std::pair<std::string, std::string>> debug;  // (node, source) per instruction, or empty
  std::vector<DelegateSpec> delegates;
  struct StateSpec {
    uint32_t value, initial;
    std::string name;
  };
  std::vector<StateSpec> state;  // format 1.2
  struct SymbolSpec {
    std::string name;
    int64_t min, max;
  };
  std::vector<SymbolSpec> symbols;             // format 1.3
  std::vector<std::vector<int64_t>> size_exprs;  // format 1.3: postfix (opcode, operand) pairs

  // A size expression (format 1.3); returns its index.
  int32_t size_expr(std::vector<int64_t> code) {
    size_exprs.push_back(std::move(code));
    return static_cast<int32_t>(size_exprs.size() - 1);
  }

  uint32_t add(ValueSpec v) {
    values.push_back(std::move(v));
    return static_cast<uint32_t>(values.size() - 1);
  }

  // Arenas: returns the arena index.
  uint32_t arena(uint64_t bytes) {
    arena_sizes.push_back(bytes);
    return static_cast<uint32_t>(arena_sizes.size() - 1);
  }

  // A tensor at `offset` bytes in planned arena `arena`.
  uint32_t planned(ScalarType dtype, std::vector<int64_t> sizes, uint64_t offset, uint32_t arena = 0) {
    ValueSpec v = tensor_spec(dtype, std::move(sizes));
    v.storage = fb::TensorStorage::Planned;
    v.arena = arena;
    v.offset = offset;
    return add(std::move(v));
  }

  // A state tensor (format 1.2) at `offset` bytes in arena `arena`, and its
  // Method.state entry with initial value `initial` (a constant's index).
  uint32_t state_tensor(ScalarType dtype, std::vector<int64_t> sizes, uint64_t offset, uint32_t initial,
                        std::string state_name, uint32_t arena = 0) {
    ValueSpec v = tensor_spec(dtype, std::move(sizes));
    v.storage = fb::TensorStorage::State;
    v.arena = arena;
    v.offset = offset;
    const uint32_t value = add(std::move(v));
    state.push_back({value, initial, std::move(state_name)});
    return value;
  }

  // A constant tensor at (segment, offset), bytes supplied elsewhere.
  uint32_t constant_at(ScalarType dtype, std::vector<int64_t> sizes, uint32_t segment, uint64_t offset) {
    ValueSpec v = tensor_spec(dtype, std::move(sizes));
    v.storage = fb::TensorStorage::Constant;
    v.segment = segment;
    v.offset = offset;
    return add(std::move(v));
  }

  // A constant tensor whose data is appended to the program's constant
  // segment (defined after ProgramBuilder).
  template <typename T>
  uint32_t constant(std::vector<int64_t> sizes, const std::vector<T>& data);

  // A tensor without storage (valid only with zero elements).
  uint32_t empty_tensor(ScalarType dtype, std::vector<int64_t> sizes) {
    return add(tensor_spec(dtype, std::move(sizes)));
  }

  uint32_t none() { return add(ValueSpec{}); }
  uint32_t int_value(int64_t x) {
    ValueSpec v;
    v.type = fb::Value::Int;
    v.i = x;
    return add(std::move(v));
  }
  uint32_t double_value(double x) {
    ValueSpec v;
    v.type = fb::Value::Double;
    v.d = x;
    return add(std::move(v));
  }
  uint32_t bool_value(bool x) {
    ValueSpec v;
    v.type = fb::Value::Bool;
    v.b = x;
    return add(std::move(v));
  }
  uint32_t string_value(std::string x) {
    ValueSpec v;
    v.type = fb::Value::String;
    v.s = std::move(x);
    return add(std::move(v));
  }
  uint32_t int_list(std::vector<int64_t> items) {
    ValueSpec v;
    v.type = fb::Value::IntList;
    v.ints = std::move(items);
    return add(std::move(v));
  }
  uint32_t double_list(std::vector<double> items) {
    ValueSpec v;
    v.type = fb::Value::DoubleList;
    v.doubles = std::move(items);
    return add(std::move(v));
  }
  uint32_t bool_list(std::vector<uint8_t> items) {
    ValueSpec v;
    v.type = fb::Value::BoolList;
    v.bools = std::move(items);
    return add(std::move(v));
  }
  uint32_t tensor_list(std::vector<uint32_t> items) {
    ValueSpec v;
    v.type = fb::Value::TensorList;
    v.tensors = std::move(items);
    return add(std::move(v));
  }
  uint32_t optional_tensor_list(std::vector<int32_t> items) {
    ValueSpec v;
    v.type = fb::Value::OptionalTensorList;
    v.optional_tensors = std::move(items);
    return add(std::move(v));
  }

  // The operator table index of name.overload, added on first use.
  uint32_t op(const std::string& op_name, const std::string& overload = "") {
    for (size_t k = 0; k < operators.size(); ++k) {
      if (operators[k].name == op_name && operators[k].overload == overload) return static_cast<uint32_t>(k);
    }
    operators.push_back({op_name, overload, true});
    return static_cast<uint32_t>(operators.size() - 1);
  }

  // Instructions: each returns its instruction index.
  uint32_t call(const std::string& op_name, const std::string& overload, std::vector<uint32_t> args) {
    return call_op(op(op_name, overload), std::move(args));
  }
  uint32_t call_op(uint32_t op_index, std::vector<uint32_t> args) {
    InstructionSpec in;
    in.kind = fb::InstructionKind::KernelCall;
    in.op = op_index;
    in.args = std::move(args);
    return add_instruction(std::move(in));
  }
  // A delegate of `backend` whose payload is a new segment, and the
  // BackendCall instruction that runs it; returns the instruction index.
  uint32_t backend_call(const std::string& backend, std::vector<uint8_t> payload, std::vector<uint32_t> ins,
                        std::vector<uint32_t> outs);
  uint32_t backend_call_of(uint32_t delegate) {
    InstructionSpec in;
    in.kind = fb::InstructionKind::BackendCall;
    in.a = delegate;
    return add_instruction(std::move(in));
  }
  uint32_t move(uint32_t from, uint32_t to) {
    InstructionSpec in;
    in.kind = fb::InstructionKind::Move;
    in.a = from;
    in.b = to;
    return add_instruction(std::move(in));
  }
  uint32_t jump_false(uint32_t cond, uint32_t target) {
    InstructionSpec in;
    in.kind = fb::InstructionKind::JumpFalse;
    in.a = cond;
    in.b = target;
    return add_instruction(std::move(in));
  }
  uint32_t free_value(uint32_t value) {
    InstructionSpec in;
    in.kind = fb::InstructionKind::Free;
    in.a = value;
    return add_instruction(std::move(in));
  }
  uint32_t add_instruction(InstructionSpec in) {
    instructions.push_back(std::move(in));
    return static_cast<uint32_t>(instructions.size() - 1);
  }

  flatbuffers::Offset<fb::Method> serialize(flatbuffers::FlatBufferBuilder& b) const {
    std::vector<flatbuffers::Offset<fb::EValue>> vals;
    for (const ValueSpec& v : values) vals.push_back(serialize_value(b, v));
    std::vector<flatbuffers::Offset<fb::Instruction>> ins;
    for (const InstructionSpec& in : instructions) ins.push_back(serialize_instruction(b, in));
    std::vector<flatbuffers::Offset<fb::Operator>> ops;
    for (const OperatorSpec& o : operators) {
      ops.push_back(fb::CreateOperatorDirect(b, o.has_name ? o.name.c_str() : nullptr, o.overload.c_str()));
    }
    std::vector<flatbuffers::Offset<fb::DebugInfo>> dbg;
    for (const auto& d : debug) dbg.push_back(fb::CreateDebugInfoDirect(b, d.first.c_str(), d.second.c_str()));
    std::vector<flatbuffers::Offset<fb::Delegate>> dels;
    for (const DelegateSpec& d : delegates) {
      dels.push_back(fb::CreateDelegateDirect(b, d.has_backend ? d.backend.c_str() : nullptr, d.payload_segment,
                                              &d.inputs, &d.outputs));
    }
    std::vector<flatbuffers::Offset<fb::StateTensor>> states;
    for (const StateSpec& st : state) states.push_back(fb::CreateStateTensorDirect(b, st.value, st.initial, st.name.c_str()));
    std::vector<flatbuffers::Offset<fb::Symbol>> syms;
    for (const SymbolSpec& sy : symbols) syms.push_back(fb::CreateSymbolDirect(b, sy.name.c_str(), sy.min, sy.max));
    std::vector<flatbuffers::Offset<fb::SizeExpr>> exprs;
    for (const auto& code : size_exprs) exprs.push_back(fb::CreateSizeExprDirect(b, &code));
    return fb::CreateMethodDirect(b, has_name ? name.c_str() : nullptr, &vals, &inputs, &outputs, &ins,
                                  &ops, &arena_sizes, &dbg, delegates.empty() ? nullptr : &dels,
                                  state.empty() ? nullptr : &states, symbols.empty() ? nullptr : &syms,
                                  size_exprs.empty() ? nullptr : &exprs);
  }

 private:
  static ValueSpec tensor_spec(ScalarType dtype, std::vector<int64_t> sizes) {
    ValueSpec v;
    v.type = fb::Value::Tensor;
    v.dtype = static_cast<fb::ScalarType>(dtype);
    v.sizes = std::move(sizes);
    return v;
  }

  static flatbuffers::Offset<fb::EValue> serialize_value(flatbuffers::FlatBufferBuilder& b, const ValueSpec& v) {
    flatbuffers::Offset<void> u = 0;
    switch (v.type) {
      case fb::Value::Tensor:
        u = fb::CreateTensorDirect(b, v.dtype, &v.sizes, v.storage, v.segment, v.arena, v.offset,
                                   v.dyn_sizes.empty() ? nullptr : &v.dyn_sizes).Union();
        break;
      case fb::Value::Int: u = fb::CreateInt(b, v.i, v.expr).Union(); break;
      case fb::Value::Double: u = fb::CreateDouble(b, v.d).Union(); break;
      case fb::Value::Bool: u = fb::CreateBool(b, v.b).Union(); break;
      case fb::Value::String: u = fb::CreateStringDirect(b, v.s.c_str()).Union(); break;
      case fb::Value::IntList: u = fb::CreateIntListDirect(b, &v.ints, v.exprs.empty() ? nullptr : &v.exprs).Union(); break;
      case fb::Value::DoubleList: u = fb::CreateDoubleListDirect(b, &v.doubles).Union(); break;
      case fb::Value::BoolList: u = fb::CreateBoolListDirect(b, &v.bools).Union(); break;
      case fb::Value::TensorList: u = fb::CreateTensorListDirect(b, &v.tensors).Union(); break;
      case fb::Value::OptionalTensorList:
        u = fb::CreateOptionalTensorListDirect(b, &v.optional_tensors).Union();
        break;
      default: break;
    }
    return fb::CreateEValue(b, v.type, u);
  }

  static flatbuffers::Offset<fb::Instruction> serialize_instruction(flatbuffers::FlatBufferBuilder& b,
                                                                    const InstructionSpec& in) {
    flatbuffers::Offset<void> u = 0;
    switch (in.kind) {
      case fb::InstructionKind::KernelCall: u = fb::CreateKernelCallDirect(b, in.op, &in.args).Union(); break;
      case fb::InstructionKind::Move: u = fb::CreateMove(b, in.a, in.b).Union(); break;
      case fb::InstructionKind::JumpFalse: u = fb::CreateJumpFalse(b, in.a, in.b).Union(); break;
      case fb::InstructionKind::Free: u = fb::CreateFree(b, in.a).Union(); break;
      case fb::InstructionKind::BackendCall: u = fb::CreateBackendCall(b, in.a).Union(); break;
      default: break;
    }
    return fb::CreateInstruction(b, in.kind, u);
  }

  ProgramBuilder* program_;
};

class ProgramBuilder {
 public:
  // Header fields a test may override (defaults: a valid file of the current version).
  uint16_t version_major = kFormatVersionMajor;
  uint16_t version_minor = kFormatVersionMinor;
  uint32_t header_size = kHeaderSizeV1;  // > 64: a grown header, zero-filled
  std::string producer = "tern-tests";
  std::vector<std::vector<uint8_t>> segments;
  // Program.metadata, written in this order (a test may break the order).
  std::vector<std::pair<std::string, std::vector<uint8_t>>> metadata;

  // Program.self_tests, written as given (a test may break any field).
  struct BundledTensorSpec {
    ScalarType dtype = ScalarType::Float32;
    std::vector<int64_t> sizes;
    std::vector<uint8_t> data;
  };
  struct SelfTestSpec {
    std::string method = "forward";
    bool has_method = true;  // false: no method name at all
    std::vector<BundledTensorSpec> inputs, expected;
    std::vector<double> rtol, atol;
    size_t repeat_first_input = 1;  // writes inputs[0] this many times (one table, many references)
  };
  std::vector<SelfTestSpec> self_tests;

  // A float32 tensor for a self-test.
  static BundledTensorSpec floats(std::vector<int64_t> sizes, const std::vector<float>& values) {
    BundledTensorSpec t{ScalarType::Float32, std::move(sizes), std::vector<uint8_t>(values.size() * 4)};
    if (!values.empty()) memcpy(t.data.data(), values.data(), t.data.size());
    return t;
  }

  MethodBuilder& method(const std::string& name) {
    methods_.emplace_back(this, name);
    return methods_.back();
  }
  std::deque<MethodBuilder>& methods() { return methods_; }

  uint32_t add_segment(std::vector<uint8_t> bytes) {
    segments.push_back(std::move(bytes));
    return static_cast<uint32_t>(segments.size() - 1);
  }

  // Appends `n` bytes to segment 0 (created on first use) at a 64-aligned
  // offset; returns that offset.
  uint64_t append_constant(const void* data, size_t n) {
    if (segments.empty()) segments.emplace_back();
    std::vector<uint8_t>& s = segments[0];
    s.resize((s.size() + 63) / 64 * 64);
    uint64_t offset = s.size();
    s.insert(s.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + n);
    return offset;
  }

  // The flatbuffer alone (root: fb::Program).
  std::vector<uint8_t> flatbuffer() const {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fb::Method>> ms;
    for (const MethodBuilder& m : methods_) ms.push_back(m.serialize(b));
    std::vector<flatbuffers::Offset<fb::Metadata>> md;
    for (const auto& [key, value] : metadata) {
      // Value, then key, one statement each: arguments are evaluated in an
      // unspecified order (GCC: right to left on x86-64, not on aarch64), and
      // the committed malformed files must be the same bytes on every target.
      const auto v = b.CreateVector(value);
      const auto k = b.CreateString(key);
      md.push_back(fb::CreateMetadata(b, k, v));
    }
    std::vector<flatbuffers::Offset<fb::SelfTest>> tests;
    for (const SelfTestSpec& t : self_tests) tests.push_back(serialize_self_test(b, t));
    b.Finish(fb::CreateProgramDirect(b, &ms, producer.c_str(), metadata.empty() ? nullptr : &md,
                                     self_tests.empty() ? nullptr : &tests));
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }

  // The whole file, 64-byte aligned in memory.
  AlignedBytes build() const {
    std::vector<uint8_t> fbuf = flatbuffer();
    const uint64_t fb_offset = (header_size + 7) / 8 * 8;
    const uint64_t table_offset = (fb_offset + fbuf.size() + 7) / 8 * 8;
    uint64_t end = table_offset + 16 * segments.size();
    std::vector<uint64_t> seg_offsets;
    for (const std::vector<uint8_t>& s : segments) {
      end = (end + 63) / 64 * 64;
      seg_offsets.push_back(end);
      end += s.size();
    }
    AlignedBytes out(end);
    uint8_t* p = out.data();
    memcpy(p + header_pos::kMagic, "TERN", 4);
    write_le(p, header_pos::kHeaderSize, header_size, 4);
    write_le(p, header_pos::kVersionMajor, version_major, 2);
    write_le(p, header_pos::kVersionMinor, version_minor, 2);
    write_le(p, header_pos::kCrc32, crc32(fbuf.data(), fbuf.size()), 4);
    write_le(p, header_pos::kFlatbufferOffset, fb_offset, 8);
    write_le(p, header_pos::kFlatbufferSize, fbuf.size(), 8);
    write_le(p, header_pos::kSegmentTableOffset, table_offset, 8);
    write_le(p, header_pos::kSegmentCount, segments.size(), 8);
    write_le(p, header_pos::kFileSize, end, 8);
    memcpy(p + fb_offset, fbuf.data(), fbuf.size());
    for (size_t i = 0; i < segments.size(); ++i) {
      write_le(p, table_offset + 16 * i, seg_offsets[i], 8);
      write_le(p, table_offset + 16 * i + 8, segments[i].size(), 8);
      if (!segments[i].empty()) memcpy(p + seg_offsets[i], segments[i].data(), segments[i].size());
    }
    return out;
  }

 private:
  // One statement per part, in a fixed order (see the metadata above: the
  // committed malformed files must be the same bytes on every target).
  static flatbuffers::Offset<fb::SelfTest> serialize_self_test(flatbuffers::FlatBufferBuilder& b,
                                                               const SelfTestSpec& t) {
    auto tensors = [&](const std::vector<BundledTensorSpec>& list, size_t repeat_first) {
      std::vector<flatbuffers::Offset<fb::BundledTensor>> out;
      for (const BundledTensorSpec& x : list) {
        const auto sizes = b.CreateVector(x.sizes);
        const auto data = b.CreateVector(x.data);
        out.push_back(fb::CreateBundledTensor(b, static_cast<fb::ScalarType>(x.dtype), sizes, data));
      }
      for (size_t k = 1; k < repeat_first && !out.empty(); ++k) out.insert(out.begin(), out[0]);
      return b.CreateVector(out);
    };
    const auto method = t.has_method ? b.CreateString(t.method) : flatbuffers::Offset<flatbuffers::String>();
    const auto inputs = tensors(t.inputs, t.repeat_first_input);
    const auto expected = tensors(t.expected, 1);
    const auto rtol = b.CreateVector(t.rtol);
    const auto atol = b.CreateVector(t.atol);
    return fb::CreateSelfTest(b, method, inputs, expected, rtol, atol);
  }

  std::deque<MethodBuilder> methods_;  // stable references
};

inline uint32_t MethodBuilder::backend_call(const std::string& backend, std::vector<uint8_t> payload,
                                            std::vector<uint32_t> ins, std::vector<uint32_t> outs) {
  uint32_t segment = program_->add_segment(std::move(payload));
  delegates.push_back({backend, segment, std::move(ins), std::move(outs), true});
  return backend_call_of(static_cast<uint32_t>(delegates.size() - 1));
}

template <typename T>
uint32_t MethodBuilder::constant(std::vector<int64_t> sizes, const std::vector<T>& data) {
  uint64_t offset = program_->append_constant(data.data(), data.size() * sizeof(T));
  return constant_at(ScalarTypeOf<T>::value, std::move(sizes), 0, offset);
}

// Writes `bytes` to a fresh file under $TMPDIR (or /tmp); returns its path.
inline std::string write_temp_file(const void* bytes, size_t n, const char* stem = "tern_test") {
  const char* dir = getenv("TMPDIR");
  std::string path = std::string(dir && dir[0] ? dir : "/tmp") + "/" + stem + "_XXXXXX";
  std::vector<char> tmpl(path.begin(), path.end());
  tmpl.push_back('\0');
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return "";
  FILE* f = fdopen(fd, "wb");
  if (n) fwrite(bytes, 1, n, f);
  fclose(f);
  return std::string(tmpl.data());
}

}  // namespace test
}  // namespace tern
