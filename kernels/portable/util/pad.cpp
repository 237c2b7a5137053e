#include "kernels/portable/util/pad.h"

#include <cstring>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

// Padded dims as (d, h, w); a pad of fewer dims has leading sizes of 1.
struct IndexPadState {
  const int64_t* src;  // persistent: out[0] + out[1] + out[2] source indices
  int64_t planes;      // product of the unpadded leading dims
  int64_t in[3], out[3];
};
static_assert(sizeof(IndexPadState) <= PrepareContext::kStateBytes, "state too large");

// The source index of output index j along one dim (see the header).
int64_t pad_source(PadMode mode, int64_t j, int64_t in, int64_t pad) {
  int64_t i = j;
  if (j < pad) {
    i = mode == PadMode::Reflect ? 2 * pad - j : pad;
  } else if (j >= in + pad) {
    i = mode == PadMode::Reflect ? 2 * (in + pad - 1) - j : in + pad - 1;
  }
  return i + (pad < 0 ? -pad : 0) - (pad > 0 ? pad : 0);
}

// E: an unsigned type of the element's size; rows of out are gathered.
template <typename E>
Error index_pad_run(RunContext& ctx, EValue* const* args) {
  IndexPadState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const E* in = args[0]->tensor.data_as<const E>();
  E* out = args[2]->tensor.data_as<E>();
  const int64_t* src_d = st.src;
  const int64_t* src_h = src_d + st.out[0];
  const int64_t* src_w = src_h + st.out[1];
  const int64_t in_plane = st.in[0] * st.in[1] * st.in[2];
  const int64_t rows = st.planes * st.out[0] * st.out[1];
  const int64_t ow = st.out[2];
  ctx.parallel_for(rows, 4096 / ow + 1, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t h = r % st.out[1], d = (r / st.out[1]) % st.out[0];
      const int64_t p = r / (st.out[1] * st.out[0]);
      const E* row = in + p * in_plane + (src_d[d] * st.in[1] + src_h[h]) * st.in[2];
      E* o = out + r * ow;
      for (int64_t w = 0; w < ow; ++w) o[w] = row[src_w[w]];
    }
  });
  return Error::Ok;
}

Error select_run(PrepareContext& ctx, ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Int8:
    case ScalarType::UInt8: ctx.set_run(index_pad_run<uint8_t>); return Error::Ok;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
    case ScalarType::Int16: ctx.set_run(index_pad_run<uint16_t>); return Error::Ok;
    case ScalarType::Float32:
    case ScalarType::Int32: ctx.set_run(index_pad_run<uint32_t>); return Error::Ok;
    case ScalarType::Float64:
    case ScalarType::Int64: ctx.set_run(index_pad_run<uint64_t>); return Error::Ok;
    default: return fail_dtype(ctx, "self", dtype);
  }
}

// Out size of one padded dim, checked as ATen does, and every source index
// in range. k: 0..2 as (d, h, w); before/after from the padding list.
Error check_dim(PrepareContext& ctx, PadMode mode, int k, int64_t in, int64_t before,
                int64_t after, int64_t* out) {
  const char* dims = "dhw";
  if (mode == PadMode::Reflect && (before >= in || after >= in)) {
    return ctx.fail(Error::InvalidProgram,
                    "padding (%lld, %lld) of dim %c must be less than its size %lld",
                    (long long)before, (long long)after, dims[k], (long long)in);
  }
  int64_t size = 0;
  if (__builtin_add_overflow(in, before, &size) || __builtin_add_overflow(size, after, out) ||
      *out < 1) {
    return ctx.fail(Error::InvalidProgram, "padding (%lld, %lld) of dim %c (size %lld) leaves no "
                    "output", (long long)before, (long long)after, dims[k], (long long)in);
  }
  for (int64_t j = 0; j < *out; ++j) {
    const int64_t i = pad_source(mode, j, in, before);
    if (i < 0 || i >= in) {
      return ctx.fail(Error::InvalidProgram,
                      "padding (%lld, %lld) of dim %c (size %lld) reads outside the input",
                      (long long)before, (long long)after, dims[k], (long long)in);
    }
  }
  return Error::Ok;
}

}  // namespace

Error index_pad_prepare(PrepareContext& ctx, Span<EValue* const> args, int spatial, PadMode mode) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& self = args[0]->tensor;
  TERN_CHECK_OK(select_run(ctx, self.dtype));
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", self.dtype));
  if (self.dim != spatial + 1 && self.dim != spatial + 2) {
    return ctx.fail(Error::InvalidProgram, "self must be %d-d or %d-d, got %d-d", spatial + 1,
                    spatial + 2, self.dim);
  }
  Span<const int64_t> pad = args[1]->ints;
  if (pad.size() != static_cast<size_t>(2 * spatial)) {
    return ctx.fail(Error::InvalidProgram, "padding must have %d entries, got %zu", 2 * spatial,
                    pad.size());
  }
  // dims other than the batch must be non-empty, as ATen checks
  for (int d = self.dim == spatial + 2 ? 1 : 0; d < self.dim; ++d) {
    if (self.sizes[d] == 0) return ctx.fail(Error::InvalidProgram, "self dim %d is empty", d);
  }
  IndexPadState st;
  st.planes = 1;
  for (int d = 0; d < self.dim - spatial; ++d) st.planes *= self.sizes[d];
  int64_t out_sizes[kMaxDims];
  memmove(out_sizes, self.sizes, sizeof(out_sizes));
  for (int k = 0; k < 3; ++k) {
    st.in[k] = st.out[k] = 1;
    if (k < 3 - spatial) continue;
    const int d = self.dim - 3 + k, pair = 2 - k;  // pairs count from the last dim
    st.in[k] = self.sizes[d];
    TERN_CHECK_OK(check_dim(ctx, mode, k, st.in[k], pad[2 * pair], pad[2 * pair + 1], &st.out[k]));
    out_sizes[d] = st.out[k];
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", out_sizes, self.dim));
  auto* src = static_cast<int64_t*>(
      ctx.allocate(static_cast<size_t>(st.out[0] + st.out[1] + st.out[2]) * sizeof(int64_t)));
  if (src == nullptr) return Error::OutOfMemory;
  st.src = src;
  for (int k = 0; k < 3; ++k) {
    const int pair = 2 - k;
    const int64_t before = k < 3 - spatial ? 0 : pad[2 * pair];
    for (int64_t j = 0; j < st.out[k]; ++j) *src++ = pad_source(mode, j, st.in[k], before);
  }
  memmove(ctx.state(), &st, sizeof(st));
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
