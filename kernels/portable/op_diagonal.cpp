// aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)
// args: [self, offset, dim1, dim2, out]
//
// out = the diagonal of the (dim1, dim2) planes of self, offset above the
// main diagonal (below when negative): dim1 and dim2 removed and a last dim
// added, out[..., i] = self[..., i (+ -offset), ..., i (+ offset), ...].
// Format v1 has no aliasing: a strided copy into a contiguous out. Any dtype.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct DiagonalState {
  int64_t first;  // the element of self where the diagonal starts
  int32_t dim1, dim2;
};

Error diagonal_run(RunContext& ctx, EValue* const* args) {
  DiagonalState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[4]->tensor;
  if (out.numel == 0) return Error::Ok;
  StridedView view;
  for (int k = 0; k < self.dim; ++k) {
    if (k == st.dim1 || k == st.dim2) continue;
    view.sizes[view.dim] = self.sizes[k];
    view.strides[view.dim++] = self.stride(k);
  }
  view.sizes[view.dim] = out.sizes[out.dim - 1];
  view.strides[view.dim++] = self.stride(st.dim1) + self.stride(st.dim2);
  const size_t elem = scalar_type_size(self.dtype);
  copy_strided(out.data, static_cast<const uint8_t*>(self.data) + st.first * elem, elem, view);
  return Error::Ok;
}

}  // namespace

Error diagonal_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& self = args[0]->tensor;
  if (self.dim < 2) return ctx.fail(Error::InvalidProgram, "self must have 2 dims or more, got %d", self.dim);
  int d1 = 0, d2 = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[2]->i, self.dim, "dim1", &d1));
  TERN_CHECK_OK(normalize_dim(ctx, args[3]->i, self.dim, "dim2", &d2));
  if (d1 == d2) return ctx.fail(Error::InvalidProgram, "dim1 and dim2 are both %d", d1);
  const int64_t offset = args[1]->i;
  const int64_t n1 = self.sizes[d1], n2 = self.sizes[d2];
  // The diagonal starts at (row, col) = (max(-offset, 0), max(offset, 0)) of each plane.
  int64_t len = 0;
  DiagonalState st{0, d1, d2};
  if (offset >= 0 && offset < n2) {
    len = n1 < n2 - offset ? n1 : n2 - offset;
    st.first = offset * self.stride(d2);
  } else if (offset < 0 && offset > -n1) {
    len = n1 + offset < n2 ? n1 + offset : n2;
    st.first = -offset * self.stride(d1);
  }
  int64_t sizes[kMaxDims];
  int n = 0;
  for (int k = 0; k < self.dim; ++k) {
    if (k != d1 && k != d2) sizes[n++] = self.sizes[k];
  }
  sizes[n++] = len;
  TERN_CHECK_OK(expect_sizes(ctx, args[4]->tensor, "out", sizes, n));
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "out", self.dtype));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(diagonal_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
