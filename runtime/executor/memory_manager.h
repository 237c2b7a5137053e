// MemoryManager: the memory a Method may use, all provided by the application.
//
//   method_allocator  what Method::load creates: values, argument lists,
//                     kernel bindings, each kernel's persistent memory
//                     (PrepareContext::allocate: packed weights, tables), and
//                     the kernels' scratch (the largest request of any
//                     instruction, once per thread). Method::load fails with
//                     OutOfMemory, naming the size, when it is too small.
//   planned           one buffer per arena of the method's memory plan
//                     (Method arena_sizes in the file), each at least that many
//                     bytes and 64-byte aligned. Activations, inputs and
//                     outputs live here, at offsets the exporter planned.
//
// Both must outlive the Method. Nothing else is allocated, ever.
//
// Kernel scratch is sized at load: every kernel states at prepare how many
// scratch bytes it needs per thread (shapes are static), so the method
// reserves the largest request once per thread, at load, and no allocator is
// consulted or reset while it runs. Method::load zeroes that scratch, so its
// pages are resident before the first run; planned arenas the application
// maps itself are worth the same care (extension/page_memory.h does it for
// tern::Module).
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
