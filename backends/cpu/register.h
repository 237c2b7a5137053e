// Registers the cpu backend ("cpu") with the runtime's backend registry, so
// that files whose delegates the exporter handed to it
// (tern.export(..., partitioners=[tern.backends.cpu.CpuPartitioner()])) load.
// Idempotent; not thread-safe (call at start-up).
//
//   tern::register_portable_kernels();
//   tern::register_cpu_backend();
#pragma once

#include "runtime/core/error.h"

namespace tern {

Error register_cpu_backend();

}  // namespace tern
