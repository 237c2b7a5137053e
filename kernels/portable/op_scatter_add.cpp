// aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
// args: [self, dim, index, src, out]
//
// out = self, then out[i][index[i][j][k]][k] += src[i][j][k] (dim = 1), in
// index order. Every dtype; src has self's dtype; integers wrap on
// overflow, bool adds as logical or. index int64 or int32 (util/scatter.h
// has the shape rules); an entry outside [0, self.size(dim)) fails at run
// (ExecutionFailed).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/elementwise.h"
#include "kernels/portable/util/scatter.h"

namespace tern {
namespace portable {
namespace {

struct ScatterAdd {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    int32_t dim;
    memcpy(&dim, ctx.state(), sizeof(dim));
    const Tensor& self = args[0]->tensor;
    const Tensor& index = args[2]->tensor;
    Tensor& out = args[4]->tensor;
    copy_bytes(out.data, self.data, self.nbytes());
    const int64_t bad = scatter_combine(self, dim, index, args[3]->tensor, out.data_as<T>(), scatter_sum<T>);
    return bad < 0 ? Error::Ok : fail_scatter_index("aten::scatter_add", self, dim, index, bad);
  }
};

}  // namespace

Error scatter_add_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  int dim = 0;
  TERN_CHECK_OK(expect_scatter(ctx, args, /*has_src=*/true, 4, &dim));
  RunFn run = select_all<ScatterAdd>(args[0]->tensor.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", args[0]->tensor.dtype);
  const int32_t st = dim;
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
