#include "extension/data_loaders.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extension/page_memory.h"
#include "runtime/core/log.h"

namespace tern {
namespace {

// Opens `path` and returns its size through *size; -1 on failure (logged).
int open_sized(const char* path, size_t* size) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    TERN_LOG_ERROR("cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    TERN_LOG_ERROR("'%s' is not a regular file", path);
    ::close(fd);
    return -1;
  }
  *size = static_cast<size_t>(st.st_size);
  return fd;
}

// Where mmap cannot populate (no MAP_POPULATE: macOS, the BSDs): asks for
// the whole file to be read ahead, then reads a byte of every page so that
// each is mapped.
void prefault_mapping(const uint8_t* p, size_t size) {
#ifdef POSIX_MADV_WILLNEED
  (void)posix_madvise(const_cast<uint8_t*>(p), size, POSIX_MADV_WILLNEED);
#endif
  const long page = sysconf(_SC_PAGESIZE);
  const size_t step = page > 0 ? static_cast<size_t>(page) : 4096;
  uint8_t sum = 0;
  for (size_t i = 0; i < size; i += step) sum += static_cast<const volatile uint8_t*>(p)[i];
  (void)sum;
}

Result<const uint8_t*> load_range(const uint8_t* data, size_t total, size_t offset, size_t size) {
  if (offset > total || size > total - offset) {
    TERN_LOG_ERROR("load of [%zu, +%zu) is outside the %zu-byte file", offset, size, total);
    return Error::InvalidArgument;
  }
  return data + offset;
}

}  // namespace

MmapDataLoader::~MmapDataLoader() { close(); }

void MmapDataLoader::close() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Error MmapDataLoader::open(const char* path, bool prefault_pages) {
  close();
  size_t size = 0;
  int fd = open_sized(path, &size);
  if (fd < 0) return Error::AccessFailed;
  if (size == 0) {
    ::close(fd);
    TERN_LOG_ERROR("'%s' is empty, not a Tern file", path);
    return Error::NotATernFile;
  }
  const bool prefault = prefault_pages && size <= prefault_budget_bytes();
#ifdef MAP_POPULATE
  const int populate = prefault ? MAP_POPULATE : 0;
#else
  const int populate = 0;
#endif
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | populate, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    TERN_LOG_ERROR("cannot map '%s' (%zu bytes): %s", path, size, strerror(errno));
    return Error::AccessFailed;
  }
  if (prefault && populate == 0) prefault_mapping(static_cast<const uint8_t*>(p), size);
  data_ = p;  // page-aligned, so 64-byte aligned segments stay aligned
  size_ = size;
  return Error::Ok;
}

Result<const uint8_t*> MmapDataLoader::load(size_t offset, size_t size) {
  return load_range(static_cast<const uint8_t*>(data_), size_, offset, size);
}

FileDataLoader::~FileDataLoader() { close(); }

void FileDataLoader::close() {
  if (data_ != nullptr) ::operator delete(data_, std::align_val_t(64));
  data_ = nullptr;
  size_ = 0;
}

// Reads all `size` bytes of fd into data; false (logged) on a read error.
static bool read_all(int fd, const char* path, uint8_t* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      TERN_LOG_ERROR("cannot read '%s' at byte %zu: %s", path, done, n < 0 ? strerror(errno) : "unexpected end");
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

Error FileDataLoader::open(const char* path) {
  close();
  size_t size = 0;
  int fd = open_sized(path, &size);
  if (fd < 0) return Error::AccessFailed;
  if (size == 0) {
    ::close(fd);
    TERN_LOG_ERROR("'%s' is empty, not a Tern file", path);
    return Error::NotATernFile;
  }
  // nothrow: this file is built without exceptions, a failure is an Error
  uint8_t* data = static_cast<uint8_t*>(::operator new((size + 63) / 64 * 64, std::align_val_t(64), std::nothrow));
  if (data == nullptr) {
    ::close(fd);
    TERN_LOG_ERROR("cannot allocate %zu bytes to read '%s'", size, path);
    return Error::OutOfMemory;
  }
  bool ok = read_all(fd, path, data, size);
  ::close(fd);
  if (!ok) {
    ::operator delete(data, std::align_val_t(64));
    return Error::AccessFailed;
  }
  data_ = data;
  size_ = size;
  return Error::Ok;
}

Result<const uint8_t*> FileDataLoader::load(size_t offset, size_t size) {
  return load_range(data_, size_, offset, size);
}

}  // namespace tern
