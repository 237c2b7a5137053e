// Harness (d): the cpu backend's payload parser (backends/cpu/program.cpp,
// load_cpu_program) and the ops it sets up. Runs like fuzz_execute, but only
// on files with a delegate, and its mutator (mutator.cpp, built with TERN_FUZZ_FOCUS_PAYLOAD)
// edits the payload segments, which the file's checksum does not cover: the
// fields of their FlatBuffer (backends/cpu/schema/cpu.fbs) and raw bytes.
#include "fuzz_util.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput input(data, size);
  const Program* program = input.program();
  if (program == nullptr) return 0;
  bool has_delegate = false;
  for (size_t k = 0; k < program->num_methods(); ++k) {
    Result<MethodMeta> meta = program->method_meta(program->method_name(k));
    has_delegate = has_delegate || (meta.ok() && meta->num_delegates() > 0);
  }
  if (!has_delegate) {
    fuzz::record_skip("no delegate");
    return -1;  // keep such inputs out of this harness's corpus
  }
  fuzz::load_methods(*program, &input.tail(), 1);
  return 0;
}
