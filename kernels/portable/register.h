// Registers the portable (reference) kernels listed in ops.def. Safe to call
// more than once; not thread-safe.
#pragma once

#include "runtime/core/error.h"

namespace tern {

Error register_portable_kernels();

}  // namespace tern
