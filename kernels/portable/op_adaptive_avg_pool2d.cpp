// aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
// args: [self, output_size, out]
//
// float32 or float64 self [c, h, w] or [n, c, h, w] -> [..., oh, ow]
// (float16 / bfloat16 staged through float32). Output row o averages input
// rows [floor(o * h / oh), ceil((o + 1) * h / oh)), as ATen's start_index /
// end_index do (windows may overlap or differ in size). Sums in double.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/conv.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct AdaptiveGeometry {
  int64_t planes;  // n * c
  int64_t h, w, oh, ow;
};


// One output plane [oh, ow] from one input plane [h, w].
template <typename T>
void adaptive_plane(const AdaptiveGeometry& g, const T* x, T* out) {
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const int64_t h0 = adaptive_window_start(oh, g.oh, g.h), h1 = adaptive_window_end(oh, g.oh, g.h);
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t w0 = adaptive_window_start(ow, g.ow, g.w), w1 = adaptive_window_end(ow, g.ow, g.w);
      double sum = 0.0;
      for (int64_t ih = h0; ih < h1; ++ih) {
        for (int64_t iw = w0; iw < w1; ++iw) sum += x[ih * g.w + iw];
      }
      out[oh * g.ow + ow] = static_cast<T>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
    }
  }
}

template <typename T>
Error adaptive_avg_pool2d_run(RunContext& ctx, EValue* const* args) {
  AdaptiveGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  const T* in = args[0]->tensor.data_as<const T>();
  T* out = args[2]->tensor.data_as<T>();
  for (int64_t p = 0; p < g.planes; ++p) {
    adaptive_plane(g, in + p * g.h * g.w, out + p * g.oh * g.ow);
  }
  return Error::Ok;
}

}  // namespace

static Error adaptive_avg_pool2d_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& x = args[0]->tensor;
  switch (x.dtype) {
    case ScalarType::Float32: ctx.set_run(adaptive_avg_pool2d_run<float>); break;
    case ScalarType::Float64: ctx.set_run(adaptive_avg_pool2d_run<double>); break;
    default: return fail_dtype(ctx, "self", x.dtype);
  }
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", x.dtype));
  const int d = x.dim;
  if (d != 3 && d != 4) {
    return ctx.fail(Error::InvalidProgram, "self must be 3-d or 4-d, got %d-d", d);
  }
  if (x.sizes[d - 3] == 0 || x.sizes[d - 2] == 0 || x.sizes[d - 1] == 0) {
    return ctx.fail(Error::InvalidProgram, "self must have non-empty planes");
  }
  int64_t osz[2];
  TERN_CHECK_OK(read_int_list(ctx, *args[1], "output_size", 2, false, osz));
  if (osz[0] < 0 || osz[1] < 0) {
    return ctx.fail(Error::InvalidProgram, "output_size (%lld, %lld) must be >= 0",
                    (long long)osz[0], (long long)osz[1]);
  }
  int64_t out_sizes[4];
  for (int i = 0; i < d - 2; ++i) out_sizes[i] = x.sizes[i];
  out_sizes[d - 2] = osz[0], out_sizes[d - 1] = osz[1];
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", out_sizes, d));
  const int64_t planes = d == 4 ? x.sizes[0] * x.sizes[1] : x.sizes[0];
  const AdaptiveGeometry g{planes, x.sizes[d - 2], x.sizes[d - 1], osz[0], osz[1]};
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error adaptive_avg_pool2d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, adaptive_avg_pool2d_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
