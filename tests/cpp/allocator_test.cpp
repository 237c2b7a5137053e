// MemoryAllocator (runtime/core/memory_allocator.h) and HeapAllocator
// (extension/heap_allocator.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "extension/heap_allocator.h"
#include "runtime/core/memory_allocator.h"

namespace tern {
namespace {

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(MemoryAllocator, test_allocate_default_alignment_is_16) {
  alignas(64) uint8_t buf[256];
  MemoryAllocator a(buf + 1, sizeof(buf) - 1);  // a misaligned base
  void* p = a.allocate(3);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(aligned(p, MemoryAllocator::kDefaultAlignment));
  void* q = a.allocate(5);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(aligned(q, 16));
  EXPECT_GE(static_cast<uint8_t*>(q), static_cast<uint8_t*>(p) + 3);
}

TEST(MemoryAllocator, test_allocate_each_power_of_two_alignment_is_honoured) {
  alignas(256) uint8_t buf[4096];
  for (size_t align = 1; align <= 256; align *= 2) {
    MemoryAllocator a(buf + 3, sizeof(buf) - 3);
    ASSERT_NE(a.allocate(1, 1), nullptr);
    void* p = a.allocate(7, align);
    ASSERT_NE(p, nullptr) << align;
    EXPECT_TRUE(aligned(p, align)) << align;
  }
}

TEST(MemoryAllocator, test_allocate_memory_is_inside_the_buffer_and_disjoint) {
  alignas(64) uint8_t buf[1024];
  MemoryAllocator a(buf, sizeof(buf));
  uint8_t* p = static_cast<uint8_t*>(a.allocate(100));
  uint8_t* q = static_cast<uint8_t*>(a.allocate(100, 64));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_GE(p, buf);
  EXPECT_LE(q + 100, buf + sizeof(buf));
  EXPECT_GE(q, p + 100);
  EXPECT_EQ(a.capacity(), sizeof(buf));
  EXPECT_GE(a.used(), 200u);
  EXPECT_EQ(a.base(), buf);
}

TEST(MemoryAllocator, test_allocate_exhausted_returns_nullptr) {
  alignas(64) uint8_t buf[128];
  MemoryAllocator a(buf, sizeof(buf));
  EXPECT_NE(a.allocate(100), nullptr);
  size_t used = a.used();
  EXPECT_EQ(a.allocate(29), nullptr);
  EXPECT_EQ(a.used(), used) << "a failed allocation must not use memory";
  EXPECT_NE(a.allocate(16), nullptr);  // 100 -> 112 aligned, + 16 = 128 exactly
  EXPECT_EQ(a.allocate(1, 1), nullptr);
}

TEST(MemoryAllocator, test_allocate_exact_capacity_succeeds) {
  alignas(64) uint8_t buf[64];
  MemoryAllocator a(buf, sizeof(buf));
  EXPECT_EQ(a.allocate(64, 64), buf);
  EXPECT_EQ(a.used(), 64u);
}

TEST(MemoryAllocator, test_allocate_huge_sizes_return_nullptr_without_overflow) {
  alignas(64) uint8_t buf[128];
  MemoryAllocator a(buf, sizeof(buf));
  ASSERT_NE(a.allocate(8), nullptr);
  EXPECT_EQ(a.allocate(SIZE_MAX), nullptr);
  EXPECT_EQ(a.allocate(SIZE_MAX - 8), nullptr);
  EXPECT_EQ(a.allocate(SIZE_MAX / 2, 64), nullptr);
  EXPECT_EQ(a.allocate(8, size_t(1) << 63), nullptr);  // padding alone exceeds the buffer
  EXPECT_EQ(a.allocate_array<uint64_t>(SIZE_MAX / 4), nullptr);  // count * 8 overflows
  EXPECT_EQ(a.used(), 8u);
}

TEST(MemoryAllocator, test_allocate_non_power_of_two_alignment_is_rejected) {
  alignas(64) uint8_t buf[256];
  MemoryAllocator a(buf, sizeof(buf));
  EXPECT_EQ(a.allocate(8, 0), nullptr);
  EXPECT_EQ(a.allocate(8, 3), nullptr);
  EXPECT_EQ(a.allocate(8, 24), nullptr);
  EXPECT_EQ(a.allocate(8, 65), nullptr);
  EXPECT_EQ(a.used(), 0u);
}

TEST(MemoryAllocator, test_reset_frees_everything) {
  alignas(64) uint8_t buf[128];
  MemoryAllocator a(buf, sizeof(buf));
  void* first = a.allocate(128, 64);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(a.allocate(1), nullptr);
  a.reset();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.allocate(128, 64), first);
}

TEST(MemoryAllocator, test_allocate_array_is_aligned_for_its_type) {
  alignas(64) uint8_t buf[256];
  MemoryAllocator a(buf + 1, sizeof(buf) - 1);
  double* d = a.allocate_array<double>(4);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(aligned(d, alignof(double)));
  struct alignas(32) Wide { char c[32]; };
  Wide* w = a.allocate_array<Wide>(2);
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(aligned(w, 32));
}

TEST(MemoryAllocator, test_zero_capacity_allocator_gives_nothing) {
  MemoryAllocator a(nullptr, 0);
  EXPECT_EQ(a.allocate(1), nullptr);
}

TEST(HeapAllocator, test_allocate_is_aligned_and_writable) {
  HeapAllocator h;
  for (size_t align = 1; align <= 4096; align *= 2) {
    uint8_t* p = static_cast<uint8_t*>(h.allocate(33, align));
    ASSERT_NE(p, nullptr) << align;
    EXPECT_TRUE(aligned(p, align)) << align;
    memset(p, 0xAB, 33);
  }
  EXPECT_GE(h.used(), 13 * 33u);
  EXPECT_EQ(h.capacity(), SIZE_MAX);
}

TEST(HeapAllocator, test_allocate_zero_bytes_returns_a_pointer) {
  HeapAllocator h;
  EXPECT_NE(h.allocate(0), nullptr);
}

TEST(HeapAllocator, test_allocate_non_power_of_two_alignment_is_rejected) {
  HeapAllocator h;
  EXPECT_EQ(h.allocate(8, 0), nullptr);
  EXPECT_EQ(h.allocate(8, 48), nullptr);
  EXPECT_EQ(h.used(), 0u);
}

TEST(HeapAllocator, test_allocate_huge_size_returns_nullptr) {
  HeapAllocator h;
  // size + alignment - 1 wraps around: must not hand out a tiny block.
  EXPECT_EQ(h.allocate(SIZE_MAX), nullptr);
  EXPECT_EQ(h.allocate(SIZE_MAX - 30, 64), nullptr);
  EXPECT_EQ(h.allocate_array<uint64_t>(SIZE_MAX / 4), nullptr);
  EXPECT_EQ(h.used(), 0u);
}

TEST(HeapAllocator, test_reset_frees_and_allows_reuse) {
  HeapAllocator h;
  for (int i = 0; i < 100; ++i) ASSERT_NE(h.allocate(1000, 64), nullptr);
  EXPECT_GE(h.used(), 100000u);
  h.reset();
  EXPECT_EQ(h.used(), 0u);
  EXPECT_NE(h.allocate(8), nullptr);
}

TEST(HeapAllocator, test_used_through_the_base_class) {
  HeapAllocator h;
  MemoryAllocator& base = h;
  ASSERT_NE(base.allocate(64, 64), nullptr);
  EXPECT_EQ(base.used(), 64u);
  base.reset();
  EXPECT_EQ(base.used(), 0u);
}

}  // namespace
}  // namespace tern
