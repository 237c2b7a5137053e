#include "extension/page_memory.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "runtime/core/log.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define TERN_PAGE_MEMORY_MMAP 1
#endif

namespace tern {
namespace {

#ifdef TERN_PAGE_MEMORY_MMAP
size_t page_bytes() {
  const long n = sysconf(_SC_PAGESIZE);
  return n > 0 ? static_cast<size_t>(n) : 4096;
}

// Makes every page of [p, p + bytes) resident. The pages are fresh from
// mmap, hence zero: writing a zero changes nothing but the mapping.
void populate(uint8_t* p, size_t bytes, size_t page) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;  // EINVAL before Linux 5.14: fall through
#endif
  volatile uint8_t* v = p;
  for (size_t i = 0; i < bytes; i += page) v[i] = 0;
}
#endif

}  // namespace

PageMemory::PageMemory(PageMemory&& other) noexcept { *this = static_cast<PageMemory&&>(other); }

PageMemory& PageMemory::operator=(PageMemory&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = other.data_;
    size_ = other.size_;
    mapped_ = other.mapped_;
    other.data_ = nullptr;
    other.size_ = other.mapped_ = 0;
  }
  return *this;
}

void PageMemory::unmap() {
  if (data_ != nullptr) {
#ifdef TERN_PAGE_MEMORY_MMAP
    munmap(data_, mapped_);
#else
    ::operator delete(data_, std::align_val_t(64));
#endif
  }
  data_ = nullptr;
  size_ = mapped_ = 0;
}

#ifdef TERN_PAGE_MEMORY_MMAP
Error PageMemory::map(size_t bytes, bool prefault) {
  unmap();
  const size_t want = bytes == 0 ? 1 : bytes;
  const size_t page = page_bytes();
  if (want > SIZE_MAX - page) {
    TERN_LOG_ERROR("cannot map %zu bytes: too large", bytes);
    return Error::OutOfMemory;
  }
  const size_t length = (want + page - 1) / page * page;
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    TERN_LOG_ERROR("cannot map %zu bytes of memory: %s", length, strerror(errno));
    return Error::OutOfMemory;
  }
  if (prefault) populate(static_cast<uint8_t*>(p), length, page);
  data_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  mapped_ = length;
  return Error::Ok;
}
#else
Error PageMemory::map(size_t bytes, bool) {
  unmap();
  const size_t want = bytes == 0 ? 1 : bytes;
  if (want > SIZE_MAX - 63) {
    TERN_LOG_ERROR("cannot allocate %zu bytes: too large", bytes);
    return Error::OutOfMemory;
  }
  const size_t length = (want + 63) / 64 * 64;
  void* p = ::operator new(length, std::align_val_t(64), std::nothrow);
  if (p == nullptr) {
    TERN_LOG_ERROR("cannot allocate %zu bytes of memory", length);
    return Error::OutOfMemory;
  }
  memset(p, 0, length);
  data_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  mapped_ = length;
  return Error::Ok;
}
#endif

size_t prefault_budget_bytes() {
#if defined(TERN_PAGE_MEMORY_MMAP) && defined(_SC_PHYS_PAGES)
  const long pages = sysconf(_SC_PHYS_PAGES);
  const size_t page = page_bytes();
  if (pages > 0 && static_cast<size_t>(pages) <= SIZE_MAX / page) return static_cast<size_t>(pages) * page / 2;
#endif
  return SIZE_MAX;
}

}  // namespace tern
