// HeapAllocator: a MemoryAllocator that takes each allocation from the heap
// and frees them all in its destructor or reset(). For extension/ and tools
// only, at load time (never on the inference path). It allocates nothing but
// the blocks it hands out (each carries its link in a header), so a failed
// allocation is a nullptr and never an exception.
#pragma once

#include <cstdint>
#include <new>

#include "runtime/core/memory_allocator.h"

namespace tern {

class HeapAllocator final : public MemoryAllocator {
 public:
  HeapAllocator() : MemoryAllocator(nullptr, 0) {}
  ~HeapAllocator() override { reset(); }
  HeapAllocator(const HeapAllocator&) = delete;
  HeapAllocator& operator=(const HeapAllocator&) = delete;

  // nullptr when the heap has no such block: the non-throwing operator new,
  // so that code built without exceptions sees the failure as a value.
  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
    if (alignment < alignof(Block)) alignment = alignof(Block);
    // Each block starts with its list link, in the first `header` bytes
    // (a multiple of the alignment, so the bytes after it stay aligned).
    const size_t header = (sizeof(Block) + alignment - 1) / alignment * alignment;
    if (size > SIZE_MAX - header - alignment) return nullptr;  // the sums below would wrap
    const size_t rounded = (size + alignment - 1) / alignment * alignment;
    void* raw = ::operator new(header + rounded, std::align_val_t(alignment), std::nothrow);
    if (raw == nullptr) return nullptr;
    blocks_ = new (raw) Block{blocks_, alignment};
    used_ += rounded;
    return static_cast<uint8_t*>(raw) + header;
  }
  void reset() override {
    while (blocks_ != nullptr) {
      Block* next = blocks_->next;
      ::operator delete(static_cast<void*>(blocks_), std::align_val_t(blocks_->alignment));
      blocks_ = next;
    }
    used_ = 0;
  }
  size_t used() const override { return used_; }
  size_t capacity() const override { return SIZE_MAX; }

 private:
  struct Block {
    Block* next;
    size_t alignment;
  };
  Block* blocks_ = nullptr;  // newest first
  size_t used_ = 0;
};

}  // namespace tern
