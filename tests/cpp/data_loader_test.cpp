// BufferDataLoader (runtime/core/data_loader.h), FileDataLoader and
// MmapDataLoader (extension/data_loaders.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "extension/data_loaders.h"
#include "program_builder.h"
#include "runtime/core/data_loader.h"

namespace tern {
namespace {

using test::write_temp_file;

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 3);
  return v;
}

// Checks the DataLoader contract on a loader over `expected`.
void check_loader(DataLoader& loader, const std::vector<uint8_t>& expected) {
  ASSERT_EQ(loader.size(), expected.size());
  Result<const uint8_t*> all = loader.load(0, expected.size());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(memcmp(*all, expected.data(), expected.size()), 0);

  Result<const uint8_t*> mid = loader.load(10, 20);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(memcmp(*mid, expected.data() + 10, 20), 0);

  Result<const uint8_t*> tail = loader.load(expected.size() - 1, 1);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(**tail, expected.back());

  EXPECT_TRUE(loader.load(expected.size(), 0).ok()) << "an empty range at the end is inside";

  EXPECT_EQ(loader.load(0, expected.size() + 1).error(), Error::InvalidArgument);
  EXPECT_EQ(loader.load(expected.size(), 1).error(), Error::InvalidArgument);
  EXPECT_EQ(loader.load(expected.size() + 1, 0).error(), Error::InvalidArgument);
  EXPECT_EQ(loader.load(1, SIZE_MAX).error(), Error::InvalidArgument) << "offset + size overflows";
  EXPECT_EQ(loader.load(SIZE_MAX, 2).error(), Error::InvalidArgument);
}

class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes)
      : path_(write_temp_file(bytes.data(), bytes.size(), "tern_loader")) {}
  ~TempFile() { unlink(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

TEST(BufferDataLoader, test_load_ranges_inside_and_outside) {
  std::vector<uint8_t> bytes = pattern(100);
  BufferDataLoader loader(bytes.data(), bytes.size());
  check_loader(loader, bytes);
  EXPECT_EQ(*loader.load(5, 1), bytes.data() + 5) << "zero-copy: points into the buffer";
}

TEST(BufferDataLoader, test_empty_buffer_loads_only_the_empty_range) {
  BufferDataLoader loader(nullptr, 0);
  EXPECT_EQ(loader.size(), 0u);
  EXPECT_TRUE(loader.load(0, 0).ok());
  EXPECT_EQ(loader.load(0, 1).error(), Error::InvalidArgument);
}

TEST(FileDataLoader, test_load_ranges_inside_and_outside) {
  std::vector<uint8_t> bytes = pattern(1000);
  TempFile f(bytes);
  FileDataLoader loader;
  ASSERT_EQ(loader.open(f.path()), Error::Ok);
  check_loader(loader, bytes);
}

TEST(FileDataLoader, test_data_is_64_byte_aligned) {
  TempFile f(pattern(77));
  FileDataLoader loader;
  ASSERT_EQ(loader.open(f.path()), Error::Ok);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*loader.load(0, 77)) % 64, 0u);
}

TEST(FileDataLoader, test_open_missing_file_is_access_failed) {
  FileDataLoader loader;
  EXPECT_EQ(loader.open("/nonexistent/dir/model.tern"), Error::AccessFailed);
  EXPECT_EQ(loader.size(), 0u);
}

TEST(FileDataLoader, test_open_directory_is_access_failed) {
  FileDataLoader loader;
  EXPECT_EQ(loader.open("/tmp"), Error::AccessFailed);
}

TEST(FileDataLoader, test_open_empty_file_is_not_a_tern_file) {
  TempFile f({});
  FileDataLoader loader;
  EXPECT_EQ(loader.open(f.path()), Error::NotATernFile);
  EXPECT_EQ(loader.load(0, 1).error(), Error::InvalidArgument);
}

TEST(MmapDataLoader, test_load_ranges_inside_and_outside) {
  std::vector<uint8_t> bytes = pattern(5000);
  TempFile f(bytes);
  MmapDataLoader loader;
  ASSERT_EQ(loader.open(f.path()), Error::Ok);
  check_loader(loader, bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*loader.load(0, 1)) % 64, 0u);
}

TEST(MmapDataLoader, test_open_missing_file_is_access_failed) {
  MmapDataLoader loader;
  EXPECT_EQ(loader.open("/nonexistent/dir/model.tern"), Error::AccessFailed);
  EXPECT_EQ(loader.size(), 0u);
  EXPECT_EQ(loader.load(0, 1).error(), Error::InvalidArgument);
}

TEST(MmapDataLoader, test_open_directory_is_access_failed) {
  MmapDataLoader loader;
  EXPECT_EQ(loader.open("/tmp"), Error::AccessFailed);
}

TEST(MmapDataLoader, test_open_empty_file_is_not_a_tern_file) {
  TempFile f({});
  MmapDataLoader loader;
  EXPECT_EQ(loader.open(f.path()), Error::NotATernFile);
  EXPECT_EQ(loader.size(), 0u);
}

// Pages of [p, p + bytes) mapped in this process's page tables (Linux:
// /proc/self/pagemap, bit 63 "present", readable without privileges); -1
// where that cannot be read. mincore() would not do: it reports the page
// cache, which holds a file just written whether it is mapped or not.
long mapped_pages(const uint8_t* p, size_t bytes) {
  FILE* f = fopen("/proc/self/pagemap", "rb");
  if (f == nullptr) return -1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) / page;
  const size_t n = (bytes + page - 1) / page;
  std::vector<uint64_t> entries(n);
  const bool ok = fseek(f, static_cast<long>(first * sizeof(uint64_t)), SEEK_SET) == 0 &&
                  fread(entries.data(), sizeof(uint64_t), n, f) == n;
  fclose(f);
  if (!ok) return -1;
  long count = 0;
  for (uint64_t e : entries) count += (e >> 63) & 1;
  return count;
}

TEST(MmapDataLoader, test_open_maps_every_page_and_without_prefault_none) {
  const size_t bytes = 300 * 1000;  // 74 pages of 4 KiB
  std::vector<uint8_t> content = pattern(bytes);
  TempFile f(content);
  MmapDataLoader lazy;
  ASSERT_EQ(lazy.open(f.path(), /*prefault=*/false), Error::Ok);
  const long before = mapped_pages(*lazy.load(0, bytes), bytes);
  if (before < 0) GTEST_SKIP() << "no /proc/self/pagemap to read";
  // The control: a lazy mapping that nothing has read has no page mapped.
  EXPECT_EQ(before, 0) << "pagemap does not tell a lazy mapping apart; the check below would prove nothing";

  MmapDataLoader ready;
  ASSERT_EQ(ready.open(f.path()), Error::Ok);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(mapped_pages(*ready.load(0, bytes), bytes), static_cast<long>((bytes + page - 1) / page));
  check_loader(ready, content);
  check_loader(lazy, content);
}

TEST(DataLoaders, test_loaders_outlive_the_file_on_disk) {
  // Both loaders keep the bytes after the path is unlinked.
  std::vector<uint8_t> bytes = pattern(300);
  std::string path = write_temp_file(bytes.data(), bytes.size(), "tern_loader");
  MmapDataLoader mm;
  FileDataLoader fl;
  ASSERT_EQ(mm.open(path.c_str()), Error::Ok);
  ASSERT_EQ(fl.open(path.c_str()), Error::Ok);
  unlink(path.c_str());
  EXPECT_EQ(memcmp(*mm.load(0, 300), bytes.data(), 300), 0);
  EXPECT_EQ(memcmp(*fl.load(0, 300), bytes.data(), 300), 0);
}

}  // namespace
}  // namespace tern
