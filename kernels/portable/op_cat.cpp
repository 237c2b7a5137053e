// aten::cat(Tensor[] tensors, int dim=0) -> Tensor
// args: [tensors, dim, out]
//
// Viewing every tensor as [outer, size(dim) * inner], out row o is the
// concatenation of the inputs' rows o: one memcpy (or dtype conversion) per
// input per outer index. As in torch, 1-d empty tensors ([0]) are skipped
// whatever out's rank, and inputs of different dtypes are converted to out's
// dtype (the promoted type of all inputs).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct CatState {
  int32_t dim;
};

bool is_legacy_empty(const Tensor& t) { return t.dim == 1 && t.sizes[0] == 0; }

Error cat_run(RunContext& ctx, EValue* const* args) {
  Span<Tensor* const> tensors = args[0]->tensors;
  Tensor& out = args[2]->tensor;
  const int dim = static_cast<const CatState*>(ctx.state())->dim;
  int64_t outer = 1;
  for (int k = 0; k < dim; ++k) outer *= out.sizes[k];
  if (outer == 0 || out.numel == 0) return Error::Ok;
  const size_t elem = scalar_type_size(out.dtype);
  const int64_t out_row = out.numel / outer;  // elements
  auto* dst = static_cast<uint8_t*>(out.data);
  for (const Tensor* t : tensors) {
    const int64_t row = t->numel / outer;  // 0 for skipped inputs
    if (row == 0) continue;
    const auto* src = static_cast<const uint8_t*>(t->data);
    const size_t src_row_bytes = static_cast<size_t>(row) * scalar_type_size(t->dtype);
    if (t->dtype == out.dtype) {
      for (int64_t o = 0; o < outer; ++o) {
        memmove(dst + o * out_row * elem, src + o * src_row_bytes, src_row_bytes);
      }
    } else {
      ConvertFn convert = select_convert(t->dtype, out.dtype);
      for (int64_t o = 0; o < outer; ++o) {
        convert(src + o * src_row_bytes, dst + o * out_row * elem, row);
      }
    }
    dst += row * elem;
  }
  return Error::Ok;
}

// Rank of the category: bool < integer < floating.
int dtype_category(ScalarType t) {
  return t == ScalarType::Bool ? 0 : scalar_type_is_floating(t) ? 2 : 1;
}

// torch.result_type of the inputs, for the dtypes select_convert supports.
ScalarType promote(Span<Tensor* const> tensors) {
  ScalarType r = tensors[0]->dtype;
  for (const Tensor* t : tensors) {
    const ScalarType a = t->dtype;
    if (dtype_category(a) != dtype_category(r)) {
      if (dtype_category(a) > dtype_category(r)) r = a;
    } else if ((a == ScalarType::UInt8 && r == ScalarType::Int8) ||
               (a == ScalarType::Int8 && r == ScalarType::UInt8)) {
      r = ScalarType::Int16;  // unsupported below: select_convert has no int16
    } else if (scalar_type_size(a) > scalar_type_size(r)) {
      r = a;
    }
  }
  return r;
}

// Out sizes: the first input that is not a skipped [0] sets the rank and the
// other dims; sizes along `dim` add up.
Error cat_sizes(PrepareContext& ctx, Span<Tensor* const> tensors, int64_t dim_arg, int* dim,
                int64_t* sizes, int* rank) {
  const Tensor* ref = tensors[0];
  for (const Tensor* t : tensors) {
    if (!is_legacy_empty(*t)) { ref = t; break; }
  }
  if (ref->dim == 0) return ctx.fail(Error::InvalidProgram, "cannot concatenate 0-d tensors");
  TERN_CHECK_OK(normalize_dim(ctx, dim_arg, ref->dim, "dim", dim));
  *rank = ref->dim;
  for (int k = 0; k < ref->dim; ++k) sizes[k] = k == *dim ? 0 : ref->sizes[k];
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = *tensors[i];
    if (is_legacy_empty(t) && ref != &t) continue;
    bool ok = t.dim == ref->dim;
    for (int k = 0; ok && k < t.dim; ++k) ok = k == *dim || t.sizes[k] == ref->sizes[k];
    if (!ok) {
      return ctx.fail(Error::InvalidProgram, "tensors[%zu] does not match tensors' sizes off dim %d",
                      i, *dim);
    }
    sizes[*dim] += t.sizes[*dim];
  }
  return Error::Ok;
}

}  // namespace

Error cat_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::TensorList));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  Span<Tensor* const> tensors = args[0]->tensors;
  const Tensor& out = args[2]->tensor;
  if (tensors.empty()) return ctx.fail(Error::InvalidProgram, "tensors is empty");
  CatState state;
  int64_t sizes[kMaxDims];
  int rank = 0;
  TERN_CHECK_OK(cat_sizes(ctx, tensors, args[1]->i, &state.dim, sizes, &rank));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, rank));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", promote(tensors)));
  for (const Tensor* t : tensors) {
    if (t->dtype != out.dtype && select_convert(t->dtype, out.dtype) == nullptr) {
      return fail_dtype(ctx, "tensors", t->dtype);
    }
  }
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(cat_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
