// Harness (c): Program::load, Method::load of every method, then set_input
// and execute() twice with inputs built from the bytes after the file (the
// tail: fuzz_util.h): dynamic input sizes in and out of their bounds, data of
// every bit pattern (NaN, infinities, huge integers, out-of-range indices).
#include "fuzz_util.h"
#include "runtime/core/data_loader.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init_runtime();
  const size_t file_size = fuzz::file_part_size(data, size);
  fuzz::AlignedCopy file(data, file_size);
  BufferDataLoader loader(file.data(), file.size());
  Result<Program> program = Program::load(loader);
  if (!program.ok()) return 0;
  fuzz::TailReader tail(data + file_size, size - file_size);
  fuzz::load_methods(*program, &tail, 2);
  return 0;
}
