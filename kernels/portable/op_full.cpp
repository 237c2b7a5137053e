// aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None,
//            Device? device=None, bool? pin_memory=None) -> Tensor
// aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None,
//                 Layout? layout=None, Device? device=None, bool? pin_memory=None,
//                 MemoryFormat? memory_format=None) -> Tensor
// args (full):      [size, fill_value, dtype, layout, device, pin_memory, out]
// args (full_like): [self, fill_value, dtype, layout, device, pin_memory, memory_format, out]
//
// Fills out with fill_value converted to out's dtype at load, as torch
// converts it (util/fill.h). Without dtype, full infers it from the Scalar
// (Int -> int64, Double -> float32, Bool -> bool) and full_like takes self's.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/fill.h"

namespace tern {
namespace portable {
namespace {

ScalarType inferred_dtype(const EValue& value) {
  return value.is_bool() ? ScalarType::Bool : value.is_int() ? ScalarType::Int64 : ScalarType::Float32;
}

}  // namespace

Error full_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  Span<const int64_t> size = args[0]->ints;
  if (size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu dims, at most %d", size.size(), kMaxDims);
  }
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[2], "dtype", inferred_dtype(*args[1]), &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[6]->tensor, "out", size.data(), static_cast<int>(size.size())));
  TERN_CHECK_OK(expect_dtype(ctx, args[6]->tensor, "out", dtype));
  return prepare_fill(ctx, *args[1], dtype, 6);
}

Error full_like_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[2], "dtype", self.dtype, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[7]->tensor, "out", self.sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[7]->tensor, "out", dtype));
  return prepare_fill(ctx, *args[1], dtype, 7);
}

}  // namespace portable
}  // namespace tern
