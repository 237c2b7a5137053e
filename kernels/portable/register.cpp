// Registers every kernel listed in ops.def, or in TERN_OPS_DEF: a selective
// build (CMake -DTERN_SELECT_OPS) sets it to a generated subset of ops.def.
#include "kernels/portable/register.h"

#include "kernels/portable/ops.h"
#include "runtime/kernel/registry.h"

#ifndef TERN_OPS_DEF
#define TERN_OPS_DEF "kernels/portable/ops.def"
#endif

namespace tern {

namespace {

// Each op's dtypes, from the last column of ops.def.
constexpr uint32_t kDtypes[] = {
#define TERN_OP(name, outs, prepare, file, dtypes) dtype_set(dtypes),
#include TERN_OPS_DEF
#undef TERN_OP
};

constexpr bool all_valid(const uint32_t* sets, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (sets[i] == kDtypeSetInvalid) return false;
  }
  return true;
}
static_assert(all_valid(kDtypes, sizeof(kDtypes) / sizeof(kDtypes[0])),
              "a dtype list in ops.def names an unknown dtype (or is empty)");

}  // namespace

Error register_portable_kernels() {
  static const OpKernel kKernels[] = {
#define TERN_OP(name, outs, prepare, file, dtypes) {name, outs, portable::prepare, dtype_set(dtypes)},
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
