// The kernel registry: a table of OpKernel the application fills before it
// loads methods. Registration is explicit so a binary holds only the ops it
// needs: kernels/portable/register.cpp registers the list in
// kernels/portable/ops.def; a selective build registers fewer.
//
//   tern::register_portable_kernels();   // once, at start-up
//
// Registration is not thread-safe; lookups after it are.
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel.h"

namespace tern {

constexpr size_t kMaxKernels = 512;

// Adds kernels. Error::InvalidArgument if a name is already registered or the
// table (kMaxKernels) is full.
Error register_kernels(Span<const OpKernel> kernels);

// The kernel for "aten::add" + "Tensor" (overload may be ""), or nullptr.
const OpKernel* find_kernel(const char* name, const char* overload);

// All registered kernels (for coverage reports and tools).
Span<const OpKernel> registered_kernels();

}  // namespace tern
