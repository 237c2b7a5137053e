// HeapAllocator: a MemoryAllocator that takes each allocation from the heap
// and frees them all in its destructor or reset(). For extension/ and tools
// only, at load time (never on the inference path). It allocates nothing but
// the blocks it hands out (each carries its link in a header), so a failed
// allocation is a nullptr and never an exception.
#pragma once

#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

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
    advise_huge_pages(raw, header + rounded);
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
  // A large block is written all at once at load (weights a backend packs
  // into it: the cpu backend's Winograd kernels, dequantized weights). On
  // Linux, where transparent huge pages are often on only where asked for
  // (`madvise` mode), asking makes that first write fault once per 2 MiB
  // instead of once per 4 KiB page: resnet18's 66 MB of Winograd weights
  // load in about half the time (2026-12-07). Advice only: where it is not
  // taken nothing changes. The whole pages inside the block, no others.
  static void advise_huge_pages(void* p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr size_t kMinBytes = size_t(4) << 20;
    const long page = sysconf(_SC_PAGESIZE);
    if (n < kMinBytes || page <= 0) return;
    const uintptr_t mask = uintptr_t(page) - 1;
    const uintptr_t first = (reinterpret_cast<uintptr_t>(p) + mask) & ~mask;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~mask;
    (void)madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
  }

  struct Block {
    Block* next;
    size_t alignment;
  };
  Block* blocks_ = nullptr;  // newest first
  size_t used_ = 0;
};

}  // namespace tern
