// Reading and writing NumPy .npy files (format 1.0/2.0/3.0, little-endian,
// C order) for tools and tests. Heap-allocating; not for the inference path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"

namespace tern {

struct NpyArray {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> data;  // numel * element size bytes, 64-byte aligned copy not guaranteed

  Tensor tensor();  // a view of `data`
};

// Errors: AccessFailed (cannot open), InvalidArgument (not an .npy file, or a
// dtype / byte order / Fortran order this reader does not take), with a log line.
Error read_npy(const char* path, NpyArray* out);
Error write_npy(const char* path, const Tensor& t);

}  // namespace tern
