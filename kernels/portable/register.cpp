// Registers every kernel listed in ops.def.
#include "kernels/portable/register.h"

#include "kernels/portable/ops.h"
#include "runtime/kernel/registry.h"

namespace tern {

Error register_portable_kernels() {
  static const OpKernel kKernels[] = {
#define TERN_OP(name, outs, prepare, file) {name, outs, portable::prepare},
#include "kernels/portable/ops.def"
#undef TERN_OP
  };
  static bool registered = false;  // idempotent: safe to call from several entry points
  if (registered) return Error::Ok;
  Error e = register_kernel_library({"portable", kPortablePriority, kKernels});
  registered = (e == Error::Ok);
  return e;
}

}  // namespace tern
