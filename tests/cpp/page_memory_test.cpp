// PageMemory (extension/page_memory.h): arenas mapped from the OS, resident
// after map() so that a method's first run takes no page faults in them.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "extension/page_memory.h"

namespace tern {
namespace {

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Pages of [p, p + bytes) that mincore() reports resident; -1 if it cannot say.
long resident_pages(const uint8_t* p, size_t bytes) {
  const size_t page = page_size();
  const size_t n = (bytes + page - 1) / page;
#if defined(__APPLE__)
  std::vector<char> vec(n);
#else
  std::vector<unsigned char> vec(n);
#endif
  if (mincore(const_cast<uint8_t*>(p), bytes, vec.data()) != 0) return -1;
  long count = 0;
  for (auto v : vec) count += (v & 1) != 0;
  return count;
}

TEST(PageMemory, test_map_gives_page_aligned_zeroed_memory_of_the_size_asked) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(64), size_t(5000), size_t(3) << 20}) {
    PageMemory m;
    ASSERT_EQ(m.map(bytes), Error::Ok) << bytes;
    ASSERT_NE(m.data(), nullptr);
    EXPECT_EQ(m.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % page_size(), 0u) << bytes;
    const size_t n = bytes == 0 ? 1 : bytes;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(m.data()[i], 0) << "byte " << i << " of " << bytes;
    m.data()[n - 1] = 7;  // writable to the last byte
  }
}

TEST(PageMemory, test_map_makes_every_page_resident_and_without_prefault_none) {
  const size_t bytes = (size_t(5) << 20) + 12345;
  PageMemory lazy;
  ASSERT_EQ(lazy.map(bytes, /*prefault=*/false), Error::Ok);
  const long before = resident_pages(lazy.data(), bytes);
  if (before < 0) GTEST_SKIP() << "mincore() cannot report on anonymous memory here";
  // The control: fresh anonymous memory is not resident until written.
  EXPECT_EQ(before, 0) << "mincore() does not tell fresh memory apart; the check below would prove nothing";

  PageMemory ready;
  ASSERT_EQ(ready.map(bytes), Error::Ok);
  const long pages = static_cast<long>((bytes + page_size() - 1) / page_size());
  EXPECT_EQ(resident_pages(ready.data(), bytes), pages);
}

TEST(PageMemory, test_move_transfers_the_block_and_unmap_empties) {
  PageMemory a;
  ASSERT_EQ(a.map(10000), Error::Ok);
  uint8_t* p = a.data();
  p[9999] = 5;
  PageMemory b(static_cast<PageMemory&&>(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[9999], 5);
  PageMemory c;
  ASSERT_EQ(c.map(100), Error::Ok);
  c = static_cast<PageMemory&&>(b);  // c's own block is unmapped first
  EXPECT_EQ(c.data(), p);
  c.unmap();
  EXPECT_EQ(c.data(), nullptr);
  EXPECT_EQ(c.size(), 0u);
}

TEST(PageMemory, test_more_than_the_address_space_is_out_of_memory) {
  PageMemory m;
  EXPECT_EQ(m.map(SIZE_MAX - 10), Error::OutOfMemory);
  EXPECT_EQ(m.data(), nullptr);
  EXPECT_EQ(m.map(size_t(1) << 62, /*prefault=*/false), Error::OutOfMemory);
}

TEST(PageMemory, test_prefault_budget_is_positive) {
  EXPECT_GT(prefault_budget_bytes(), size_t(1) << 20);
}

}  // namespace
}  // namespace tern
