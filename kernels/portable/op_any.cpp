// aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
// args: [self, dim, keepdim, out]
//
// out = (self != 0).any(dim): Bool, or UInt8 for a UInt8 self (as torch).
// Works on the bits of any dtype: an integer or bool is nonzero when any bit
// is set, a float when any bit but the sign is set (-0.0 is zero; NaN is not).
#include <cstring>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

typedef uint8_t __attribute__((may_alias)) Bits8;
typedef uint16_t __attribute__((may_alias)) Bits16;
typedef uint32_t __attribute__((may_alias)) Bits32;
typedef uint64_t __attribute__((may_alias)) Bits64;

struct AnyState {
  int32_t dim;      // -1 for a 0-d self
  uint64_t nonzero; // bits that make an element nonzero
};

template <typename U>
Error any_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  const auto* state = static_cast<const AnyState*>(ctx.state());
  const U mask = static_cast<U>(state->nonzero);
  // self as [outer, n, inner], out as [outer, inner]
  int64_t outer = 1, n = 1, inner = 1;
  for (int k = 0; k < self.dim; ++k) {
    int64_t& part = k < state->dim ? outer : k == state->dim ? n : inner;
    part *= self.sizes[k];
  }
  const U* in = static_cast<const U*>(self.data);
  auto* out = static_cast<uint8_t*>(args[3]->tensor.data);
  if (inner == 1) {  // each out element scans a contiguous run, stopping at the first hit
    for (int64_t o = 0; o < outer; ++o) {
      const U* row = in + o * n;
      int64_t r = 0;
      while (r < n && !(row[r] & mask)) ++r;
      out[o] = r < n;
    }
    return Error::Ok;
  }
  for (int64_t o = 0; o < outer; ++o, out += inner) {
    memset(out, 0, static_cast<size_t>(inner));
    for (int64_t r = 0; r < n; ++r) {
      const U* row = in + (o * n + r) * inner;
      for (int64_t i = 0; i < inner; ++i) out[i] |= (row[i] & mask) != 0;
    }
  }
  return Error::Ok;
}

uint64_t nonzero_bits(ScalarType t) {
  const size_t bits = scalar_type_size(t) * 8;
  const uint64_t all = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  return scalar_type_is_floating(t) ? all >> 1 : all;  // floats: drop the sign bit
}

}  // namespace

Error any_dim_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  AnyState state;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, self.dim, "dim", &state.dim));
  if (self.dim == 0) state.dim = -1;
  int64_t sizes[kMaxDims];
  int rank = 0;
  for (int k = 0; k < self.dim; ++k) {
    if (k != state.dim) sizes[rank++] = self.sizes[k];
    else if (args[2]->b) sizes[rank++] = 1;
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[3]->tensor, "out", sizes, rank));
  const ScalarType out_dtype = self.dtype == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool;
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", out_dtype));
  state.nonzero = nonzero_bits(self.dtype);
  switch (scalar_type_size(self.dtype)) {
    case 1: ctx.set_run(any_run<Bits8>); break;
    case 2: ctx.set_run(any_run<Bits16>); break;
    case 4: ctx.set_run(any_run<Bits32>); break;
    case 8: ctx.set_run(any_run<Bits64>); break;
    default: return fail_dtype(ctx, "self", self.dtype);
  }
  memcpy(ctx.state(), &state, sizeof(state));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
