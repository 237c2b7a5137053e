// DataLoader: where the bytes of a .tern file come from.
//
// The Program asks for the whole file once at load (load(0, size)) and keeps
// the returned buffer for its lifetime: constants point into it (zero-copy).
// The loader must outlive every Program loaded from it. Implementations:
//   BufferDataLoader  (runtime/core)  a buffer the caller owns
//   FileDataLoader    (extension/)    reads the file into an aligned buffer
//   MmapDataLoader    (extension/)    maps the file read-only, zero-copy
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

namespace tern {

class DataLoader {
 public:
  virtual ~DataLoader() = default;

  // Total size of the data in bytes.
  virtual size_t size() const = 0;

  // A pointer to bytes [offset, offset + size), valid while the loader lives.
  // Errors: InvalidArgument when the range is outside the data; AccessFailed
  // when the source could not be read.
  virtual Result<const uint8_t*> load(size_t offset, size_t size) = 0;
};

// A DataLoader over a buffer the caller owns (and keeps alive). For zero-copy
// constants the buffer should be 64-byte aligned; the verifier rejects a
// misaligned one.
class BufferDataLoader final : public DataLoader {
 public:
  BufferDataLoader(const void* data, size_t size)
      : data_(static_cast<const uint8_t*>(data)), size_(size) {}
  size_t size() const override { return size_; }
  Result<const uint8_t*> load(size_t offset, size_t size) override;

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace tern
