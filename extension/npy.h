// Reading and writing NumPy .npy files (format 1.0/2.0/3.0, little-endian,
// C order) for tools and tests. Heap-allocating; not for the inference path.
//
//   NpyArray a;
//   if (read_npy("x.npy", &a) != Error::Ok) fprintf(stderr, "%s\n", last_error_message());
//   Tensor t = a.tensor();  // points into a.data
//
// The reader takes the file as untrusted, the way Program::load takes a .tern
// file: it refuses (InvalidArgument, with a log line naming the file, what was
// wrong and what it expected) a preamble without the magic or of a version
// other than 1.0, 2.0 and 3.0; a header longer than kNpyMaxHeaderBytes or than
// the file; a header that is not the dict numpy writes (keys 'descr',
// 'fortran_order' and 'shape', each once, then only spaces); a descr other
// than the ones listed in npy.cpp (plain little-endian numbers and bool);
// Fortran order; a shape that is not a tuple of sizes; more than kMaxDims dims;
// a negative size; sizes whose product, each 0 taken as 1, is over
// kNpyMaxBytes; and data shorter than the shape. Nothing is allocated from a
// size the file states before the size is checked against the bytes there are.
// Bytes after the data are ignored, as numpy ignores them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"

namespace tern {

// The longest header the reader takes. numpy writes headers of a few hundred
// bytes (version 2.0 only past 65535) and its own reader refuses more than
// 10000 unless told otherwise; this bound keeps a 4-byte length of a version
// 2.0 or 3.0 file from asking for up to 4 GiB.
constexpr size_t kNpyMaxHeaderBytes = 65536;
// The most bytes an array may span, each 0 size taken as 1 (the runtime's
// bound on a tensor, runtime/format/verify.cpp): no product of its sizes
// (numel, strides, bytes) overflows, even in an empty array.
constexpr uint64_t kNpyMaxBytes = uint64_t(1) << 48;

struct NpyArray {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;  // at most kMaxDims, each >= 0
  std::vector<uint8_t> data;   // numel * element size bytes, 64-byte aligned copy not guaranteed

  Tensor tensor();  // a view of `data`
};

// Reads the .npy file at `path` into *out (left unchanged on an error).
// Errors: AccessFailed (cannot open or read it, or it is not a regular file,
// whose size cannot be known), InvalidArgument (not an .npy file this reader
// takes: see above), with a log line.
Error read_npy(const char* path, NpyArray* out);

// The same for an .npy file held in memory: the `size` bytes at `data` (no
// byte past them is read, no NUL terminator is needed). `name` names the
// file in the log lines (a path, or a description such as "fuzz input").
// The array's bytes are copied into out->data; `data` may be freed after.
// Errors: InvalidArgument, as read_npy.
Error read_npy_buffer(const uint8_t* data, size_t size, const char* name, NpyArray* out);

// Writes `t` as a version 1.0 .npy file, its data 64-byte aligned as numpy
// writes it. Errors: InvalidArgument (a dtype with no .npy name),
// AccessFailed (cannot create or write the file).
Error write_npy(const char* path, const Tensor& t);

}  // namespace tern
