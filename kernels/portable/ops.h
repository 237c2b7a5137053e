// Declarations of every portable kernel's prepare function (from ops.def).
#pragma once

#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {
#define TERN_OP(name, outs, prepare, file, dtypes) Error prepare(PrepareContext&, Span<EValue* const>);
#include "kernels/portable/ops.def"
#undef TERN_OP
}  // namespace portable
}  // namespace tern
