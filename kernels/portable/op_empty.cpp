// aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None,
//     Layout? layout=None, Device? device=None, bool? pin_memory=None,
//     MemoryFormat? memory_format=None) -> Tensor
//   args: [size, dtype, layout, device, pin_memory, memory_format, out]
// aten::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None,
//     Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
//   args: [size, stride, dtype, layout, device, pin_memory, out]
//
// ATen leaves the elements undefined; here they are zeros, so a model that
// reads them by mistake gives the same answer every time. Tensors in the
// file are contiguous: empty_strided's strides only say how ATen would lay
// the elements out, which no later op can observe without as_strided.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/fill.h"

namespace tern {
namespace portable {
namespace {

Error prepare_empty(PrepareContext& ctx, Span<EValue* const> args, size_t dtype_arg, size_t out) {
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, out));
  Span<const int64_t> size = args[0]->ints;
  if (size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu dims, at most %d", size.size(), kMaxDims);
  }
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[dtype_arg], "dtype", ScalarType::Float32, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[out]->tensor, "out", size.data(), static_cast<int>(size.size())));
  TERN_CHECK_OK(expect_dtype(ctx, args[out]->tensor, "out", dtype));
  EValue zero;
  zero.tag = Tag::Int;
  zero.i = 0;
  return prepare_fill(ctx, zero, dtype, out);
}

}  // namespace

Error empty_memory_format_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  return prepare_empty(ctx, args, 1, 6);
}

Error empty_strided_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  if (args[1]->ints.size() != args[0]->ints.size()) {
    return ctx.fail(Error::InvalidProgram, "stride has %zu dims, size %zu", args[1]->ints.size(), args[0]->ints.size());
  }
  return prepare_empty(ctx, args, 2, 6);
}

}  // namespace portable
}  // namespace tern
