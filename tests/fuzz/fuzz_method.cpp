// Harness (b): Program::load, then Method::load of every method (kernel
// binding and each kernel's prepare, delegate init on the cpu backend), then
// the Method's destruction; nothing is executed.
#include "fuzz_util.h"
#include "runtime/core/data_loader.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init_runtime();
  fuzz::AlignedCopy file(data, fuzz::file_part_size(data, size));
  BufferDataLoader loader(file.data(), file.size());
  Result<Program> program = Program::load(loader);
  if (!program.ok()) return 0;
  fuzz::load_methods(*program, nullptr, 0);
  return 0;
}
