// DataLoaders for files (runtime/core/data_loader.h has the interface and the
// buffer loader).
//
//   MmapDataLoader   maps the file read-only: zero-copy, constants are used
//                    in place. The default. Every page is read and mapped at
//                    open() (MAP_POPULATE on Linux and Android, a read of
//                    each page elsewhere), so that the first inference does
//                    not take a page fault for each weight page it reads
//                    (mobilenet_v2: ~210 of them); open(path, false) maps
//                    lazily instead, for a file whose pages are mostly not
//                    needed (methods that are never run). A file larger
//                    than prefault_budget_bytes() (page_memory.h: half the
//                    physical memory) is mapped lazily.
//   FileDataLoader   reads the whole file into a 64-byte aligned heap buffer
//                    (for file systems without mmap).
//
//   tern::MmapDataLoader loader;
//   if (loader.open("model.tern") != tern::Error::Ok) { ... }
//   auto program = tern::Program::load(loader);
//
// Both allocate or map at open() only; load() returns pointers into that
// memory, valid until the loader is destroyed. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/data_loader.h"

namespace tern {

class MmapDataLoader final : public DataLoader {
 public:
  MmapDataLoader() = default;
  ~MmapDataLoader() override;
  MmapDataLoader(const MmapDataLoader&) = delete;
  MmapDataLoader& operator=(const MmapDataLoader&) = delete;

  // Errors: AccessFailed (with the OS error) when the file cannot be opened,
  // stat'ed or mapped; NotATernFile when it is empty. Opening again first
  // unmaps the previous file; on an error the loader is left empty.
  // prefault: read and map every page now (above); false: on first touch.
  Error open(const char* path, bool prefault = true);
  void close();
  size_t size() const override { return size_; }
  Result<const uint8_t*> load(size_t offset, size_t size) override;

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

class FileDataLoader final : public DataLoader {
 public:
  FileDataLoader() = default;
  ~FileDataLoader() override;
  FileDataLoader(const FileDataLoader&) = delete;
  FileDataLoader& operator=(const FileDataLoader&) = delete;

  // Errors as MmapDataLoader::open, plus OutOfMemory.
  Error open(const char* path);
  void close();
  size_t size() const override { return size_; }
  Result<const uint8_t*> load(size_t offset, size_t size) override;

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tern
