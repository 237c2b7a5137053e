// aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor
// args: [self, src, dim, index, out]
//
// out = self, then out[..., index, ...] = src along dim (src has self's
// shape without dim, any dtype: converted to self's, as torch does). A
// negative index counts from the end; the index is static, so out of range
// fails at load. Any dtype.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {

Error select_scatter_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Int));
  const Tensor& self = args[0]->tensor;
  if (self.dim == 0) return ctx.fail(Error::InvalidProgram, "cannot select from a 0-d tensor");
  SliceScatterState st{};
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[2]->i, self.dim, "dim", &dim));
  const int64_t size = self.sizes[dim];
  const int64_t index = args[3]->i;
  if (index < -size || index >= size) {
    return ctx.fail(Error::InvalidProgram, "index %lld out of range for dim %d of size %lld",
                    (long long)index, dim, (long long)size);
  }
  st.dim = dim;
  st.start = index < 0 ? index + size : index;
  st.step = 1;
  st.count = 1;
  int64_t sizes[kMaxDims];
  int n = 0;
  for (int k = 0; k < self.dim; ++k) {
    if (k != dim) sizes[n++] = self.sizes[k];
  }
  TERN_CHECK_OK(expect_slice_scatter(ctx, args, 4, sizes, n, &st));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(slice_scatter_run<4>);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
