// aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
// args: [self, split_sizes, dim, out]   (out: a TensorList, one item per split)
//
// torch.split and torch.chunk export to this op. Viewing self as
// [outer, size(dim) * inner], item i's row o is the slice of self's row o
// that starts after the items before it: one memcpy per item per outer index
// (the inverse of cat). Items may have size 0 along dim.
#include <cstring>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

struct SplitState {
  int32_t dim;
};

Error split_with_sizes_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  Span<Tensor* const> items = args[3]->tensors;
  const int dim = static_cast<const SplitState*>(ctx.state())->dim;
  int64_t outer = 1;
  for (int k = 0; k < dim; ++k) outer *= self.sizes[k];
  if (outer == 0 || self.numel == 0) return Error::Ok;
  const size_t row_bytes = self.nbytes() / static_cast<size_t>(outer);
  const auto* src = static_cast<const uint8_t*>(self.data);
  for (Tensor* item : items) {
    const size_t item_bytes = item->nbytes() / static_cast<size_t>(outer);
    if (item_bytes == 0) continue;
    auto* dst = static_cast<uint8_t*>(item->data);
    for (int64_t o = 0; o < outer; ++o) {
      memmove(dst + o * item_bytes, src + o * row_bytes, item_bytes);
    }
    src += item_bytes;  // the next item starts where this one ends, in every row
  }
  return Error::Ok;
}

// split_sizes: non-negative, adding up to self's size along dim, one per item.
Error check_split_sizes(PrepareContext& ctx, Span<const int64_t> split_sizes, size_t n_items,
                        int64_t dim_size) {
  if (split_sizes.size() != n_items) {
    return ctx.fail(Error::InvalidProgram, "split_sizes has %zu entries but out has %zu tensors",
                    split_sizes.size(), n_items);
  }
  int64_t total = 0;
  for (size_t i = 0; i < split_sizes.size(); ++i) {
    if (split_sizes[i] < 0 || split_sizes[i] > dim_size) {
      return ctx.fail(Error::InvalidProgram, "split_sizes[%zu] = %lld is outside [0, %lld]", i,
                      (long long)split_sizes[i], (long long)dim_size);
    }
    total += split_sizes[i];  // each <= dim_size, so no overflow before the check below
    if (total > dim_size) break;
  }
  if (total != dim_size) {
    return ctx.fail(Error::InvalidProgram, "split_sizes add up to %lld%s, but self has size %lld",
                    (long long)total, total > dim_size ? " or more" : "", (long long)dim_size);
  }
  return Error::Ok;
}

}  // namespace

Error split_with_sizes_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 3, Tag::TensorList));
  const Tensor& self = args[0]->tensor;
  Span<Tensor* const> items = args[3]->tensors;
  if (self.dim == 0) return ctx.fail(Error::InvalidProgram, "cannot split a 0-d tensor");
  SplitState state;
  TERN_CHECK_OK(normalize_dim(ctx, args[2]->i, self.dim, "dim", &state.dim));
  TERN_CHECK_OK(check_split_sizes(ctx, args[1]->ints, items.size(), self.sizes[state.dim]));
  int64_t sizes[kMaxDims];
  for (int k = 0; k < self.dim; ++k) sizes[k] = self.sizes[k];
  for (size_t i = 0; i < items.size(); ++i) {
    sizes[state.dim] = args[1]->ints[i];
    TERN_CHECK_OK(expect_sizes(ctx, *items[i], "out item", sizes, self.dim));
    TERN_CHECK_OK(expect_dtype(ctx, *items[i], "out item", self.dtype));
  }
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(split_with_sizes_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
