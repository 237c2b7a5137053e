// Harness (b): Program::load, then Method::load of every method (kernel
// binding and each kernel's prepare, delegate init on the cpu backend), then
// the Method's destruction; nothing is executed.
#include "fuzz_util.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput input(data, size);
  if (input.program() == nullptr) return 0;
  fuzz::load_methods(*input.program(), nullptr, 0);
  return 0;
}
