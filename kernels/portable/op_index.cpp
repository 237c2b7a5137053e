// aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
// args: [self, indices, out]   (indices: an OptionalTensorList)
//
// Advanced indexing with integer index tensors (x[i], x[:, i, j], x[i, ..., j],
// ...): the index tensors broadcast together, adjacent ones keep their place
// in the result and separated ones put the broadcast dims first (NumPy rules,
// see util/advanced_index.h). Any dtype for self; index tensors int64 or
// int32, negative entries count from the end; an entry outside [-size, size)
// fails at run (ExecutionFailed).
// Boolean mask indices (x[mask]) are OperatorMissing: the result's shape is
// the number of true entries, which format v1's static shapes cannot hold.
#include <cstring>

#include "kernels/portable/util/advanced_index.h"
#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

Error index_run(RunContext&, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[2]->tensor;
  if (out.numel == 0) return Error::Ok;
  IndexPlan plan;
  index_plan_init(self, args[1]->tensors, &plan);
  int64_t block = 1;  // trailing elements copied as one run
  const int tail = index_plan_tail(plan, &block);
  const size_t elem = scalar_type_size(self.dtype);
  const size_t bytes = static_cast<size_t>(block) * elem;
  const auto* src = static_cast<const uint8_t*>(self.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  BadIndex bad;
  const bool ok = index_plan_walk(plan, plan.rank - tail, [&](int64_t offset) {
    memmove(dst, src + offset * elem, bytes);
    dst += bytes;
  }, &bad);
  if (ok) return Error::Ok;
  log_bad_index("aten::index.Tensor", plan, bad);
  return Error::ExecutionFailed;
}

}  // namespace

Error index_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::OptionalTensorList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  IndexPlan plan;
  TERN_CHECK_OK(index_plan_prepare(ctx, self, args[1]->tensors, &plan));
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", plan.sizes, plan.rank));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  ctx.set_run(index_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
