// HeapAllocator: a MemoryAllocator that takes each allocation from the heap
// and frees them all in its destructor or reset(). For extension/ and tools
// only, at load time (never on the inference path).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "runtime/core/memory_allocator.h"

namespace tern {

class HeapAllocator final : public MemoryAllocator {
 public:
  HeapAllocator() : MemoryAllocator(nullptr, 0) {}
  ~HeapAllocator() override { reset(); }
  HeapAllocator(const HeapAllocator&) = delete;
  HeapAllocator& operator=(const HeapAllocator&) = delete;

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    if (size > SIZE_MAX - alignment) return nullptr;  // the rounding below would wrap
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    void* p = aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
    if (p != nullptr) {
      blocks_.push_back(p);
      used_ += rounded;
    }
    return p;
  }
  void reset() override {
    for (void* p : blocks_) free(p);
    blocks_.clear();
    used_ = 0;
  }
  size_t used() const override { return used_; }
  size_t capacity() const override { return SIZE_MAX; }

 private:
  std::vector<void*> blocks_;
  size_t used_ = 0;
};

}  // namespace tern
