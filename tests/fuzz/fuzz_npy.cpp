// Harness (f): the .npy reader (extension/npy.h) on untrusted bytes, as
// tern-run reads a file given with --input: read_npy_buffer, then, when it
// accepts the bytes, the tensor view and every byte of the data. The input
// is an .npy file, not a .tern file, so this harness does without
// fuzz_util.h's layout and mutator.cpp (plain libFuzzer mutation, seeded
// from tests/fuzz/seeds_npy/).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "extension/npy.h"
#include "runtime/core/log.h"
#include "tests/fuzz/outcome.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (set_log_level(LogLevel::Fatal), true);  // every refusal logs a line
  (void)quiet;
  // A block of exactly `size` bytes (replay_main's vector may be larger), so
  // that ASan sees a read past the end of the file.
  uint8_t* copy = static_cast<uint8_t*>(malloc(size ? size : 1));
  if (copy == nullptr) abort();
  if (size) memcpy(copy, data, size);
  NpyArray a;
  const Error e = fuzz::record("read_npy_buffer", read_npy_buffer(copy, size, "fuzz input", &a));
  free(copy);
  if (e != Error::Ok) return 0;
  fuzz::record_completed();
  // What the reader promises of an array it accepts (extension/npy.h).
  const Tensor t = a.tensor();
  if (t.dim < 0 || t.dim > kMaxDims || t.nbytes() != a.data.size()) abort();
  static volatile uint64_t sink = 0;
  uint64_t s = static_cast<uint64_t>(t.numel);
  for (int d = 0; d < t.dim; ++d) s += static_cast<uint64_t>(t.stride(d)) + static_cast<uint64_t>(t.sizes[d]);
  const uint8_t* bytes = static_cast<const uint8_t*>(t.data);
  for (size_t i = 0; i < t.nbytes(); ++i) s += bytes[i];
  sink = sink + s;
  return 0;
}
