// aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor
// args: [self, pad, value, out]
//
// F.pad(mode="constant"). pad holds (before, after) pairs starting from the
// LAST dim: pad = [l, r, t, b] pads dim -1 by l, r and dim -2 by t, b. A
// negative pad crops. out = value everywhere, then the part of self that
// survives the crops is copied in, one memcpy per innermost run. Any dtype;
// value is converted to it at load (truncated toward zero for integers).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct PadState {
  uint64_t value_bits;  // value in self's dtype (low bytes)
};

// The per-dim (before, after) amounts: 0 for dims that pad does not reach.
void pad_amounts(const Tensor& self, Span<const int64_t> pad, int64_t* before, int64_t* after) {
  const int n = static_cast<int>(pad.size() / 2);
  for (int d = 0; d < self.dim; ++d) {
    const int k = self.dim - 1 - d;  // pair index counted from the last dim
    before[d] = k < n ? pad[2 * k] : 0;
    after[d] = k < n ? pad[2 * k + 1] : 0;
  }
}

Error constant_pad_nd_run(RunContext& ctx, EValue* const* args) {
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[3]->tensor;
  const size_t elem = scalar_type_size(self.dtype);
  StridedView fill;  // stride 0: every element of out reads the value
  fill.dim = 1;
  fill.sizes[0] = out.numel;
  copy_strided(out.data, &static_cast<const PadState*>(ctx.state())->value_bits, elem, fill);
  if (self.dim == 0) {
    copy_bytes(out.data, self.data, elem);
    return Error::Ok;
  }
  int64_t before[kMaxDims], after[kMaxDims];
  pad_amounts(self, args[1]->ints, before, after);
  // The copied region: self index i + crop maps to out index i + shift.
  Odometer src, dst;
  int64_t src_start = 0, dst_start = 0, run = 0;
  for (int d = 0; d < self.dim; ++d) {
    const int64_t crop = before[d] < 0 ? -before[d] : 0;
    const int64_t shift = before[d] > 0 ? before[d] : 0;
    const int64_t n = self.sizes[d] - crop - (after[d] < 0 ? -after[d] : 0);
    if (n <= 0) return Error::Ok;
    src_start += crop * self.stride(d);
    dst_start += shift * out.stride(d);
    if (d + 1 < self.dim) {
      src.add(n, self.stride(d));
      dst.add(n, out.stride(d));
    } else {
      run = n;
    }
  }
  const auto* s = static_cast<const uint8_t*>(self.data) + src_start * elem;
  auto* o = static_cast<uint8_t*>(out.data) + dst_start * elem;
  for (int64_t r = src.count(); r > 0; --r, src.next(), dst.next()) {
    memmove(o + dst.offset * elem, s + src.offset * elem, static_cast<size_t>(run) * elem);
  }
  return Error::Ok;
}

// value in self's dtype, through select_convert from int64 / double / bool.
Error convert_value(PrepareContext& ctx, const EValue& v, ScalarType dtype, uint64_t* bits) {
  if (!v.is_scalar()) {
    return ctx.fail(Error::InvalidProgram, "value must be a Scalar, got %s", tag_name(v.tag));
  }
  const ScalarType from = v.is_int() ? ScalarType::Int64
                          : v.is_bool() ? ScalarType::Bool : ScalarType::Float64;
  ConvertFn convert = select_convert(from, dtype);
  if (convert == nullptr) return fail_dtype(ctx, "self", dtype);
  const void* src = v.is_int() ? static_cast<const void*>(&v.i)
                    : v.is_bool() ? static_cast<const void*>(&v.b) : static_cast<const void*>(&v.d);
  *bits = 0;
  convert(src, bits, 1);
  return Error::Ok;
}

}  // namespace

Error constant_pad_nd_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  Span<const int64_t> pad = args[1]->ints;
  if (pad.size() % 2 != 0 || pad.size() > 2 * static_cast<size_t>(self.dim)) {
    return ctx.fail(Error::InvalidProgram, "pad has %zu entries; need an even number, at most %d",
                    pad.size(), 2 * self.dim);
  }
  int64_t before[kMaxDims], after[kMaxDims], sizes[kMaxDims];
  pad_amounts(self, pad, before, after);
  for (int d = 0; d < self.dim; ++d) {
    int64_t size = 0;
    if (__builtin_add_overflow(self.sizes[d], before[d], &size) ||
        __builtin_add_overflow(size, after[d], &sizes[d]) || sizes[d] < 0) {
      return ctx.fail(Error::InvalidProgram,
                      "pad (%lld, %lld) of dim %d (size %lld) gives no valid size",
                      (long long)before[d], (long long)after[d], d, (long long)self.sizes[d]);
    }
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[3]->tensor, "out", sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", self.dtype));
  PadState state;
  TERN_CHECK_OK(convert_value(ctx, *args[2], self.dtype, &state.value_bits));
  memmove(ctx.state(), &state, sizeof(state));
  ctx.set_run(constant_pad_nd_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
