// MemoryAllocator: a bump allocator over a buffer the caller owns.
//
// Tern takes all its memory from allocators the application passes in: one
// for method metadata (values, kernel bindings), planned arenas for
// activations, and scratch sized at load. Nothing is freed one by one; reset()
// frees everything at once. Not thread-safe.
//
//   alignas(64) static uint8_t pool[64 * 1024];
//   tern::MemoryAllocator alloc(pool, sizeof(pool));
//   float* x = alloc.allocate_array<float>(256);   // nullptr when full
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace tern {

class MemoryAllocator {
 public:
  static constexpr size_t kDefaultAlignment = 16;

  MemoryAllocator(void* base, size_t size)
      : base_(static_cast<uint8_t*>(base)), size_(size) {}
  virtual ~MemoryAllocator() = default;

  // Returns `size` bytes aligned to `alignment` (a power of two), or nullptr
  // when the buffer is exhausted or `alignment` is not a power of two.
  // Defined here, like every virtual of this class, so that it has no key
  // function: code built with RTTI (tests, bindings) can then subclass it
  // although the runtime is built with -fno-rtti.
  virtual void* allocate(size_t size, size_t alignment = kDefaultAlignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
    uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
    uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t)(alignment - 1);
    size_t pad = aligned - start;
    if (pad > size_ - used_ || size > size_ - used_ - pad) return nullptr;
    used_ += pad + size;
    return reinterpret_cast<void*>(aligned);
  }

  template <typename T>
  T* allocate_array(size_t count, size_t alignment = alignof(T)) {
    if (count != 0 && sizeof(T) > SIZE_MAX / count) return nullptr;
    void* p = allocate(count * sizeof(T), alignment < kDefaultAlignment ? kDefaultAlignment : alignment);
    return static_cast<T*>(p);
  }

  // Frees everything allocated so far.
  virtual void reset() { used_ = 0; }

  // Bytes handed out so far (with alignment padding), and the total.
  virtual size_t used() const { return used_; }
  virtual size_t capacity() const { return size_; }
  uint8_t* base() const { return base_; }

 private:
  uint8_t* base_;
  size_t size_;
  size_t used_ = 0;
};

}  // namespace tern
