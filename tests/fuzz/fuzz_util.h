// What the fuzz harnesses (tests/fuzz/fuzz_*.cpp) share.
//
// Every harness takes the same input: a .tern file, optionally followed by
// bytes the harness turns into input tensors (the "tail"). The header's
// file_size says where the file ends; a reader ignores bytes past it, so a
// seed corpus of plain exported files works for every harness, and the
// mutator (mutator.cpp) can edit the file and the tail separately.
//
//   [0, file_size)     the .tern file, copied to 64-byte aligned memory of
//                      exactly its size (ASan sees a read past its end)
//   [file_size, size)  the tail: input dtypes, sizes and data
//
// The harnesses act as a careful application would: they give the runtime
// memory only as far as a cap (kMaxPlannedBytes: an app checks the arena
// sizes MethodMeta reports before it allocates them), and bound loops
// (MethodOptions::max_loop_instructions), so that a file asking for 1 TB or
// 2^60 loop iterations is refused the way an app would refuse it, and every
// other input must come back with an Error or results, never a crash, a
// sanitizer report, a leak or a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/core/data_loader.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "tests/fuzz/outcome.h"

namespace tern {
namespace fuzz {

// The most planned memory (all arenas of a method) a harness gives a method.
constexpr uint64_t kMaxPlannedBytes = uint64_t(64) << 20;
// The most method-allocator bytes (metadata, packed weights, scratch).
constexpr size_t kMaxMethodBytes = size_t(256) << 20;
// Loop budget per execute(): keeps each run under the fuzzer's timeout.
constexpr uint64_t kMaxLoopInstructions = uint64_t(1) << 14;

// Registers the portable kernels and the cpu backend, enables dynamic shapes
// and silences the log (every refusal logs a line). Call from
// LLVMFuzzerInitialize or the first LLVMFuzzerTestOneInput.
void init_runtime();

// Bytes at a 64-byte aligned address, exactly `size` of them.
class AlignedCopy {
 public:
  AlignedCopy(const uint8_t* data, size_t size);
  ~AlignedCopy() { free(data_); }
  AlignedCopy(const AlignedCopy&) = delete;
  AlignedCopy& operator=(const AlignedCopy&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Where the file ends in a fuzz input: the header's file_size when it lies
// inside the input, else the whole input.
size_t file_part_size(const uint8_t* data, size_t size);

// Reads the tail one value at a time; past its end every read returns 0, so
// an empty tail gives all-zero inputs.
class TailReader {
 public:
  TailReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(u8()) << (8 * i);
    return v;
  }
  // Fills `n` bytes from the tail, repeating it when it is shorter (zeros if empty).
  void fill(void* out, size_t n);
  bool empty() const { return pos_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// What every harness starts from: the runtime initialized (init_runtime), the
// file part of the input in aligned memory, Program::load on it, and a reader
// over the tail. program() is null when the file was refused.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size);
  FuzzInput(const FuzzInput&) = delete;
  FuzzInput& operator=(const FuzzInput&) = delete;
  const AlignedCopy& file() const { return file_; }
  const Program* program() const { return program_.ok() ? &*program_ : nullptr; }
  TailReader& tail() { return tail_; }

 private:
  static size_t init_and_measure(const uint8_t* data, size_t size);
  const size_t file_size_;
  AlignedCopy file_;
  BufferDataLoader loader_;
  Result<Program> program_;
  TailReader tail_;
};

// The memory a Method needs: every allocation on the heap, each of its exact
// size (ASan sees overruns of each), up to a total cap. Planned arenas: one
// heap block per arena, of exactly its size.
class FuzzMemory {
 public:
  // Allocates the arenas of method `name`; false if there is no such method or
  // they exceed kMaxPlannedBytes (the caller then skips the method).
  bool plan(const Program& program, const char* name);
  ~FuzzMemory();
  MemoryManager& manager() { return manager_; }

 private:
  class CappedHeap final : public MemoryAllocator {
   public:
    CappedHeap() : MemoryAllocator(nullptr, 0) {}
    ~CappedHeap() override { reset(); }
    void* allocate(size_t size, size_t alignment) override;
    void reset() override;
    size_t used() const override { return used_; }
    size_t capacity() const override { return kMaxMethodBytes; }

   private:
    std::vector<void*> blocks_;
    size_t used_ = 0;
  };
  CappedHeap heap_;
  std::vector<void*> arenas_;
  std::vector<Span<uint8_t>> spans_;
  MemoryManager manager_;
};

// Sets every input of `m` from the tail: for a dynamic input, sizes chosen
// from the tail (mostly inside the bounds, sometimes outside, which must be
// refused); data from the tail. Returns the first error set_input gave (the
// harness then skips execute()).
Error set_inputs_from_tail(const MethodMeta& meta, Method& m, TailReader& tail);

// Loads, optionally runs, and drops every method of `program` (each with its
// own memory), as an app would. `execute_runs`: how many times to execute.
void load_methods(const Program& program, TailReader* tail, int execute_runs);

// Reads every output element (so that ASan and MSan see what the kernels wrote).
uint64_t touch_outputs(const Method& m);

}  // namespace fuzz
}  // namespace tern
