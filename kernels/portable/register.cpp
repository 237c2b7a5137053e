// Registers every kernel listed in ops.def, or in TERN_OPS_DEF: a selective
// build (CMake -DTERN_SELECT_OPS) sets it to a generated subset of ops.def.
#include "kernels/portable/register.h"

#include "kernels/portable/ops.h"
#include "runtime/kernel/registry.h"

#ifndef TERN_OPS_DEF
#define TERN_OPS_DEF "kernels/portable/ops.def"
#endif

namespace tern {

Error register_portable_kernels() {
  static const OpKernel kKernels[] = {
#define TERN_OP(name, outs, prepare, file) {name, outs, portable::prepare},
#include TERN_OPS_DEF
#undef TERN_OP
  };
  static bool registered = false;  // idempotent: safe to call from several entry points
  if (registered) return Error::Ok;
  Error e = register_kernel_library({"portable", kPortablePriority, kKernels});
  registered = (e == Error::Ok);
  return e;
}

}  // namespace tern
