// aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)
// aten::_unsafe_view(Tensor self, SymInt[] size) -> Tensor
// args: [self, size, out]
//
// Format v1 has no aliasing: the view is a copy of self's bytes into out.
// `size` may hold one -1, inferred from self's numel.
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "runtime/core/overflow.h"

namespace tern {
namespace portable {
namespace {

// Resolves `size` (with at most one -1) against `numel` into `out`.
Error resolve_view_size(PrepareContext& ctx, Span<const int64_t> size, int64_t numel,
                        int64_t* out) {
  if (size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu dims, at most %d supported", size.size(),
                    kMaxDims);
  }
  int infer = -1;
  uint64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    out[i] = size[i];
    if (size[i] == -1) {
      if (infer >= 0) return ctx.fail(Error::InvalidProgram, "size has more than one -1");
      infer = static_cast<int>(i);
    } else if (size[i] < 0) {
      return ctx.fail(Error::InvalidProgram, "size[%zu] = %lld is negative", i, (long long)size[i]);
    } else if (!checked_mul(known, static_cast<uint64_t>(size[i]), &known)) {
      return ctx.fail(Error::InvalidProgram, "size overflows");
    }
  }
  if (infer >= 0) {
    if (known == 0 || static_cast<uint64_t>(numel) % known != 0) {
      return ctx.fail(Error::InvalidProgram, "cannot infer the -1 in size for %lld elements",
                      (long long)numel);
    }
    out[infer] = numel / static_cast<int64_t>(known);
  } else if (known != static_cast<uint64_t>(numel)) {
    return ctx.fail(Error::InvalidProgram, "size has %llu elements, self has %lld",
                    (unsigned long long)known, (long long)numel);
  }
  return Error::Ok;
}

}  // namespace

Error view_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[2]->tensor;
  int64_t sizes[kMaxDims];
  TERN_CHECK_OK(resolve_view_size(ctx, args[1]->ints, self.numel, sizes));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, static_cast<int>(args[1]->ints.size())));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", self.dtype));
  ctx.set_run(copy_run<2>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
