// MemoryManager: the memory a Method may use, all provided by the application.
//
//   method_allocator  metadata created at Method::load: values, argument
//                     lists, kernel bindings, and the kernels' scratch (the
//                     largest request of any instruction). Method::load fails
//                     with OutOfMemory, naming the size, when it is too small.
//   planned           one buffer per arena of the method's memory plan
//                     (Method arena_sizes in the file), each at least that many
//                     bytes and 64-byte aligned. Activations, inputs and
//                     outputs live here, at offsets the exporter planned.
//
// Both must outlive the Method. Nothing else is allocated, ever.
//
// Kernel scratch replaces the per-instruction temp allocator that DESIGN.md
// describes: every kernel states at prepare how many scratch bytes it needs
// (shapes are static), so the method reserves the largest request once, at
// load, and no allocator is consulted or reset while it runs.
#pragma once

#include <cstdint>

#include "runtime/core/memory_allocator.h"
#include "runtime/core/span.h"

namespace tern {

struct MemoryManager {
  MemoryAllocator* method_allocator = nullptr;
  Span<const Span<uint8_t>> planned;
};

}  // namespace tern
