// The kernel registry: the kernel libraries the application registers before
// it loads methods. Registration is explicit so a binary holds only the
// kernels it links: kernels/portable/register.cpp registers the portable
// library (every op in kernels/portable/ops.def, or a selection of them); an
// optimized library registers its own kernels beside it.
//
//   tern::register_portable_kernels();                 // the reference, always
//   static const tern::OpKernel kFast[] = {{"aten::convolution", 1, fast_conv_prepare,
//                                           tern::dtype_bit(tern::ScalarType::Float32)}};
//   tern::register_kernel_library({"fast", 10, kFast});  // preferred where it applies
//
// Layering: for each instruction, Method::load tries the op's kernels from
// the most preferred library (highest priority) down, skipping those whose
// OpKernel::dtypes exclude the instruction's dtype; the first whose prepare
// succeeds is bound. A prepare that fails with Error::OperatorMissing ("not
// these arguments") passes the instruction on to the next library; any other
// error fails the load. The portable library (priority kPortablePriority)
// is the reference every other library is tested against.
//
// The registry keeps pointers to the libraries' names and kernel arrays:
// they must live as long as the process (static tables). Registration is not
// thread-safe; lookups after it are.
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel.h"

namespace tern {

struct KernelLibrary {
  const char* name;  // unique, e.g. "portable"
  int priority;      // higher is preferred
  Span<const OpKernel> kernels;
};

constexpr int kPortablePriority = 0;
constexpr size_t kMaxKernelLibraries = 16;
// The most kernels one op can have (one per library).
constexpr size_t kMaxKernelCandidates = kMaxKernelLibraries;

// Adds a library. InvalidArgument (logged) if its name is taken, an op
// appears twice in it, or kMaxKernelLibraries are registered already.
Error register_kernel_library(const KernelLibrary& library);

// The libraries, most preferred first.
Span<const KernelLibrary> kernel_libraries();

// The library called `name`, or nullptr.
const KernelLibrary* find_kernel_library(const char* name);

// The kernels for "aten::add" + "Tensor" (overload may be "") that take
// instruction dtype `dtype` (nullptr: any), most preferred first, into
// out[0..max). Returns how many there are (at most max).
size_t find_kernels(const char* name, const char* overload, const ScalarType* dtype,
                    const OpKernel** out, size_t max);

// The most preferred kernel for "aten::add" + "Tensor", any dtype, or nullptr.
const OpKernel* find_kernel(const char* name, const char* overload);

// The kernel for the full name "aten::add.Tensor" in `library` alone, or nullptr.
const OpKernel* find_kernel_in(const KernelLibrary& library, const char* full_name);

// The library whose kernel array holds `kernel`, or nullptr.
const KernelLibrary* library_of(const OpKernel& kernel);

// Registers `kernels` as one more library, named "user<k>", preferred over
// the portable one (tests and small applications).
Error register_kernels(Span<const OpKernel> kernels);

}  // namespace tern
