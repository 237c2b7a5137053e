// aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners,
//                               float[]? scale_factors) -> Tensor
// args: [input, output_size, align_corners, scale_factors, out]
//
// F.interpolate(mode="bilinear"). input [n, c, h, w], float32 or float64.
// Along each dim, output index i reads input indices i0, i1 with weights
// l0 = 1 - l1, l1 (ATen's compute_source_index_and_lambda):
//   real = align_corners ? i * step : max(0, (i + 0.5) * step - 0.5)
//   i0 = min(trunc(real), in - 1), i1 = min(i0 + 1, in - 1), l1 = clamp(real - i0, 0, 1)
// (same sizes: i0 = i1 = i, a copy). `step` is from util/upsample.h, in the
// input's type. out = l0h * (l0w * x[i0, j0] + l1w * x[i0, j1])
//                   + l1h * (l0w * x[i1, j0] + l1w * x[i1, j1]).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/upsample.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct BilinearState {
  UpsampleGeometry g;
  bool align_corners;
};
static_assert(sizeof(BilinearState) <= PrepareContext::kStateBytes, "state too large");

template <typename T>
struct LinearTap {
  int64_t i0, i1;
  T l0, l1;
};

template <typename T>
LinearTap<T> linear_tap(int64_t i, int64_t in, int64_t out, bool align_corners, T step) {
  if (in == out) return {i, i, T(1), T(0)};
  T real = align_corners ? step * static_cast<T>(i) : step * (static_cast<T>(i) + T(0.5)) - T(0.5);
  if (real < T(0)) real = T(0);
  const int64_t t = static_cast<int64_t>(real);
  const int64_t i0 = t < in - 1 ? t : in - 1;
  T l1 = real - static_cast<T>(i0);
  l1 = l1 < T(0) ? T(0) : l1 > T(1) ? T(1) : l1;
  return {i0, i0 < in - 1 ? i0 + 1 : i0, T(1) - l1, l1};
}

// cols: [ow] taps along the width, in scratch; rows are computed as they come.
template <typename T>
Error upsample_bilinear2d_run(RunContext& ctx, EValue* const* args) {
  BilinearState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const UpsampleGeometry& g = st.g;
  auto* cols = static_cast<LinearTap<T>*>(ctx.scratch());
  const auto step_w = static_cast<T>(upsample_step(g.w, g.ow, st.align_corners, g.scale_w));
  const auto step_h = static_cast<T>(upsample_step(g.h, g.oh, st.align_corners, g.scale_h));
  for (int64_t j = 0; j < g.ow; ++j) cols[j] = linear_tap(j, g.w, g.ow, st.align_corners, step_w);
  const T* src = args[0]->tensor.data_as<const T>();
  T* dst = args[4]->tensor.data_as<T>();
  for (int64_t p = 0; p < g.planes; ++p, src += g.h * g.w) {
    for (int64_t i = 0; i < g.oh; ++i, dst += g.ow) {
      const LinearTap<T> r = linear_tap(i, g.h, g.oh, st.align_corners, step_h);
      const T* row0 = src + r.i0 * g.w;
      const T* row1 = src + r.i1 * g.w;
      for (int64_t j = 0; j < g.ow; ++j) {
        const LinearTap<T>& c = cols[j];
        dst[j] = r.l0 * (c.l0 * row0[c.i0] + c.l1 * row0[c.i1]) +
                 r.l1 * (c.l0 * row1[c.i0] + c.l1 * row1[c.i1]);
      }
    }
  }
  return Error::Ok;
}

}  // namespace

static Error upsample_bilinear2d_vec_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 2, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  const Tensor& input = args[0]->tensor;
  BilinearState st;
  memset(&st, 0, sizeof(st));
  TERN_CHECK_OK(
      upsample2d_prepare_geometry(ctx, input, *args[1], *args[3], args[4]->tensor, &st.g));
  st.align_corners = args[2]->b;
  memmove(ctx.state(), &st, sizeof(st));
  switch (input.dtype) {
    case ScalarType::Float32:
      ctx.request_scratch(static_cast<size_t>(st.g.ow) * sizeof(LinearTap<float>));
      ctx.set_run(upsample_bilinear2d_run<float>);
      break;
    case ScalarType::Float64:
      ctx.request_scratch(static_cast<size_t>(st.g.ow) * sizeof(LinearTap<double>));
      ctx.set_run(upsample_bilinear2d_run<double>);
      break;
    default: return fail_dtype(ctx, "input", input.dtype);
  }
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error upsample_bilinear2d_vec_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, upsample_bilinear2d_vec_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
