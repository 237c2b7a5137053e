// aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None,
//                     Device? device=None, bool? pin_memory=None) -> Tensor
// args: [s, dtype, layout, device, pin_memory, out]. out = a 0-d tensor
// holding s converted to dtype at load (util/fill.h); without dtype,
// float32 (torch's default dtype, whatever the Scalar's kind). Every dtype.
//
// With no tensor input, the exporter's fold_constants pass computes it at
// export time; the kernel runs when a file keeps the op (another exporter,
// or passes without folding).
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/fill.h"

namespace tern {
namespace portable {

Error scalar_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[1], "dtype", ScalarType::Float32, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", nullptr, 0));
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "out", dtype));
  return prepare_fill(ctx, *args[0], dtype, 5);
}

}  // namespace portable
}  // namespace tern
