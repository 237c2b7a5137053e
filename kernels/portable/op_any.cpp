// aten::any(Tensor self) -> Tensor
// args: [self, out]: x.any(), over every element, 0-d.
//
// aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
// args: [self, dim, keepdim, out]
//
// aten::any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor
// args: [self, dim, keepdim, out]: None reduces every dim, [] none (as torch).
//
// out = (self != 0).any(dims): Bool, or UInt8 for a UInt8 self (as torch).
// Works on the bits of any dtype: an integer or bool is nonzero when any bit
// is set, a float when any bit but the sign is set (-0.0 is zero; NaN is not).
// The dims are reduced through util/reduce.h's plan.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {
namespace {

typedef uint8_t __attribute__((may_alias)) Bits8;
typedef uint16_t __attribute__((may_alias)) Bits16;
typedef uint32_t __attribute__((may_alias)) Bits32;
typedef uint64_t __attribute__((may_alias)) Bits64;

struct AnyState {
  uint32_t mask;     // reduced dims
  int32_t out;       // index of the out tensor in args
  uint64_t nonzero;  // bits that make an element nonzero
};

// True if one of the n elements at p has a bit of `mask` set.
template <typename U>
bool any_in_run(const U* p, int64_t n, U mask) {
  int64_t i = 0;
  while (i < n && !(p[i] & mask)) ++i;
  return i < n;
}

template <typename U>
Error any_run(RunContext& ctx, EValue* const* args) {
  AnyState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  const U mask = static_cast<U>(st.nonzero);
  ReducePlan p;
  reduce_plan(self, st.mask, &p);
  Odometer kept, reduced;
  reduce_odometers(p, &kept, &reduced);
  const U* in = static_cast<const U*>(self.data);
  auto* out = static_cast<uint8_t*>(args[st.out]->tensor.data);
  const int64_t last = p.sizes[p.groups - 1];
  const int64_t n_outer = kept.count(), n_reduced = reduced.count();
  if (p.reduced[p.groups - 1]) {  // each out element scans contiguous runs, stopping at the first hit
    for (int64_t o = 0; o < n_outer; ++o, kept.next()) {
      bool hit = false;
      for (int64_t r = 0; r < n_reduced; ++r, reduced.next()) {  // walks on to wrap `reduced`
        hit = hit || any_in_run(in + kept.offset + reduced.offset, last, mask);
      }
      out[o] = hit;
    }
    return Error::Ok;
  }
  for (int64_t o = 0; o < n_outer; ++o, kept.next(), out += last) {  // ORs whole rows
    memset(out, 0, static_cast<size_t>(last));
    for (int64_t r = 0; r < n_reduced; ++r, reduced.next()) {
      const U* row = in + kept.offset + reduced.offset;
      for (int64_t i = 0; i < last; ++i) out[i] |= (row[i] & mask) != 0;
    }
  }
  return Error::Ok;
}

uint64_t nonzero_bits(ScalarType t) {
  const size_t bits = scalar_type_size(t) * 8;
  const uint64_t all = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  return scalar_type_is_floating(t) ? all >> 1 : all;  // floats: drop the sign bit
}

// The checks and run of every overload, once the reduced dims are known.
Error prepare_any(PrepareContext& ctx, Span<EValue* const> args, uint32_t mask, bool keepdim) {
  const Tensor& self = args[0]->tensor;
  AnyState st;
  st.mask = mask;
  st.out = static_cast<int32_t>(args.size() - 1);
  const Tensor& out = args[st.out]->tensor;
  int64_t sizes[kMaxDims];
  const int rank = reduce_out_sizes(self, mask, keepdim, sizes);
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, rank));
  const ScalarType out_dtype = self.dtype == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool;
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", out_dtype));
  st.nonzero = nonzero_bits(self.dtype);
  switch (scalar_type_size(self.dtype)) {
    case 1: ctx.set_run(any_run<Bits8>); break;
    case 2: ctx.set_run(any_run<Bits16>); break;
    case 4: ctx.set_run(any_run<Bits32>); break;
    case 8: ctx.set_run(any_run<Bits64>); break;
    default: return fail_dtype(ctx, "self", self.dtype);
  }
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

}  // namespace

Error any_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  const int rank = args[0]->tensor.dim;
  return prepare_any(ctx, args, rank == 0 ? 0u : (1u << rank) - 1, /*keepdim=*/false);
}

Error any_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const int rank = args[0]->tensor.dim;
  int d = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, rank, "dim", &d));
  return prepare_any(ctx, args, rank == 0 ? 0u : 1u << d, args[2]->b);
}

Error any_dims_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  uint32_t mask = 0;
  TERN_CHECK_OK(reduce_dims_mask(ctx, *args[1], args[0]->tensor.dim, &mask, /*empty_is_all=*/false));
  return prepare_any(ctx, args, mask, args[2]->b);
}

}  // namespace portable
}  // namespace tern
