// Harness (c): Program::load, Method::load of every method, then set_input
// and execute() twice with inputs built from the bytes after the file (the
// tail: fuzz_util.h): dynamic input sizes in and out of their bounds, data of
// every bit pattern (NaN, infinities, huge integers, out-of-range indices).
#include "fuzz_util.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput input(data, size);
  if (input.program() == nullptr) return 0;
  fuzz::load_methods(*input.program(), &input.tail(), 2);
  return 0;
}
