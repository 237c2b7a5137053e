// aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor
// args: [self, dim, index, sparse_grad, out]
//
// out[i][j][k] = self[i][index[i][j][k]][k] (dim = 1); out has index's
// shape. Any dtype (elements are copied as bytes); index int64 or int32
// with self's rank (see util/scatter.h for the shape rules); an entry
// outside [0, self.size(dim)) fails at run (ExecutionFailed). sparse_grad
// only matters to autograd.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/scatter.h"

namespace tern {
namespace portable {
namespace {

struct GatherState {
  int32_t dim;
};

Error gather_run(RunContext& ctx, EValue* const* args) {
  GatherState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const Tensor& index = args[2]->tensor;
  const size_t elem = scalar_type_size(self.dtype);
  const auto* src = static_cast<const uint8_t*>(self.data);
  auto* dst = static_cast<uint8_t*>(args[4]->tensor.data);
  const int64_t bad = for_each_scatter_entry(self, st.dim, index, nullptr, [&](int64_t at, int64_t, int64_t i) {
    memmove(dst + i * elem, src + at * elem, elem);
  });
  return bad < 0 ? Error::Ok : fail_scatter_index("aten::gather", self, st.dim, index, bad);
}

}  // namespace

Error gather_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  GatherState st{0};
  int dim = 0;
  TERN_CHECK_OK(expect_scatter_index(ctx, args, 1, 2, nullptr, &dim));
  st.dim = dim;
  const Tensor& index = args[2]->tensor;
  TERN_CHECK_OK(expect_sizes(ctx, args[4]->tensor, "out", index.sizes, index.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "out", args[0]->tensor.dtype));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(gather_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
