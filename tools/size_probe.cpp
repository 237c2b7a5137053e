// tern-size-probe: the core runtime alone, linked into the smallest program
// that uses all of it, so that `make size` (scripts/size_report.sh) can
// measure what the core costs an application.
//
//   tern-size-probe MODEL.tern
//
// Reads MODEL.tern into a buffer, verifies it (BufferDataLoader +
// Program::load), binds its "forward" method (Method::load) and runs it once
// (Method::execute). It links tern_runtime only: no kernels are registered and
// nothing from extension/ is used, so a method that calls a kernel fails to
// load with "no kernel" (exit status 1); that is expected, the code path is
// what is measured. Built with TERN_SIZE_PROBE_EMPTY, main is empty: the
// difference between the two stripped binaries is the core's own size.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "runtime/core/data_loader.h"
#include "runtime/core/log.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"

#ifndef TERN_SIZE_PROBE_EMPTY

namespace {

constexpr size_t kMethodBytes = 1 << 20;  // values, kernel bindings, scratch
constexpr size_t kMaxArenas = 8;

// The whole file in a 64-byte aligned buffer (constants are used in place).
uint8_t* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return nullptr;
  uint8_t* data = nullptr;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = static_cast<uint8_t*>(aligned_alloc(64, (static_cast<size_t>(n) + 63) / 64 * 64));
    if (data != nullptr && fread(data, 1, static_cast<size_t>(n), f) != static_cast<size_t>(n)) {
      free(data);
      data = nullptr;
    }
  }
  fclose(f);
  *size = n > 0 ? static_cast<size_t>(n) : 0;
  return data;
}

int fail(const char* step) {
  fprintf(stderr, "tern-size-probe: %s failed: %s\n", step, tern::last_error_message());
  return 1;
}

int run(const uint8_t* data, size_t size) {
  tern::BufferDataLoader loader(data, size);
  tern::Result<tern::Program> program = tern::Program::load(loader);
  if (!program.ok()) return fail("Program::load");

  alignas(64) static uint8_t method_pool[kMethodBytes];
  tern::MemoryAllocator method_allocator(method_pool, sizeof(method_pool));
  // The planned arenas, sized as the file says (MethodMeta).
  tern::Result<tern::MethodMeta> meta = program->method_meta("forward");
  if (!meta.ok() || meta->num_arenas() > kMaxArenas) return fail("MethodMeta");
  tern::Span<uint8_t> arenas[kMaxArenas];
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    const size_t bytes = (static_cast<size_t>(*meta->arena_size(i)) + 63) / 64 * 64;
    arenas[i] = tern::Span<uint8_t>(static_cast<uint8_t*>(aligned_alloc(64, bytes ? bytes : 64)), bytes);
    if (arenas[i].data() == nullptr) return fail("allocating the planned arenas");
  }
  tern::MemoryManager memory{&method_allocator, tern::Span<const tern::Span<uint8_t>>(arenas, meta->num_arenas())};

  tern::Result<tern::Method> method = tern::Method::load(*program, "forward", memory);
  if (!method.ok()) return fail("Method::load");
  if (method->execute() != tern::Error::Ok) return fail("Method::execute");
  printf("tern-size-probe: ran %zu instructions\n", method->num_instructions());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: tern-size-probe MODEL.tern\n");
    return 2;
  }
  size_t size = 0;
  uint8_t* data = read_file(argv[1], &size);
  if (data == nullptr) {
    fprintf(stderr, "tern-size-probe: cannot read %s\n", argv[1]);
    return 1;
  }
  return run(data, size);  // the OS takes back the buffers
}

#else  // TERN_SIZE_PROBE_EMPTY: the same program without the runtime

int main() { return 0; }

#endif
