// aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size,
//                               float[]? scale_factors) -> Tensor
// args: [input, output_size, scale_factors, out]
//
// F.interpolate(mode="nearest") and nn.Upsample. input [n, c, h, w] of any
// dtype (elements are copied by size). Output (i, j) reads input
// (src(i, h, oh, scale_h), src(j, w, ow, scale_w)) with
//   src(i, in, out, scale) = min(floor(i * step), in - 1)
// and `step` from util/upsample.h, in float as ATen's CPU kernel computes it
// (its legacy "nearest" mode, not "nearest-exact").
#include <cmath>
#include <cstring>

#include "kernels/portable/util/upsample.h"

namespace tern {
namespace portable {
namespace {

typedef uint16_t __attribute__((may_alias)) Bits16;
typedef uint32_t __attribute__((may_alias)) Bits32;
typedef uint64_t __attribute__((may_alias)) Bits64;

int64_t nearest_index(int64_t i, int64_t in, float step) {
  const int64_t src = static_cast<int64_t>(floorf(static_cast<float>(i) * step));
  return src < in - 1 ? src : in - 1;
}

// Each output row copies the gathered columns of one input row. cols: [ow]
// source columns, in scratch.
template <typename T>
Error upsample_nearest2d_run(RunContext& ctx, EValue* const* args) {
  UpsampleGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  auto* cols = static_cast<int64_t*>(ctx.scratch());
  const auto step_w = static_cast<float>(upsample_step(g.w, g.ow, false, g.scale_w));
  const auto step_h = static_cast<float>(upsample_step(g.h, g.oh, false, g.scale_h));
  for (int64_t j = 0; j < g.ow; ++j) cols[j] = nearest_index(j, g.w, step_w);
  const T* src = args[0]->tensor.data_as<const T>();
  T* dst = args[3]->tensor.data_as<T>();
  for (int64_t p = 0; p < g.planes; ++p, src += g.h * g.w) {
    for (int64_t i = 0; i < g.oh; ++i, dst += g.ow) {
      const T* row = src + nearest_index(i, g.h, step_h) * g.w;
      for (int64_t j = 0; j < g.ow; ++j) dst[j] = row[cols[j]];
    }
  }
  return Error::Ok;
}

}  // namespace

Error upsample_nearest2d_vec_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  UpsampleGeometry g;
  TERN_CHECK_OK(upsample2d_prepare_geometry(ctx, args[0]->tensor, *args[1], *args[2],
                                            args[3]->tensor, &g));
  static_assert(sizeof(g) <= PrepareContext::kStateBytes, "state too large");
  memmove(ctx.state(), &g, sizeof(g));
  ctx.request_scratch(static_cast<size_t>(g.ow) * sizeof(int64_t));
  switch (scalar_type_size(args[0]->tensor.dtype)) {
    case 1: ctx.set_run(upsample_nearest2d_run<uint8_t>); break;
    case 2: ctx.set_run(upsample_nearest2d_run<Bits16>); break;
    case 4: ctx.set_run(upsample_nearest2d_run<Bits32>); break;
    default: ctx.set_run(upsample_nearest2d_run<Bits64>); break;
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
