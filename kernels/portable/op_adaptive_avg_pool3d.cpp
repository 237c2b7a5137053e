// aten::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
// args: [self, output_size, out]
//
// F.adaptive_avg_pool3d (torch.export decomposes adaptive_avg_pool3d to this
// op, or to mean.dim for output size 1). float32 or float64 self
// [c, d, h, w] or [n, c, d, h, w] -> [..., od, oh, ow]. Along each dim,
// output o averages input [floor(o * in / out), ceil((o + 1) * in / out)),
// as ATen's start_index / end_index (windows may overlap or differ in size).
// Sums in double.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/conv.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct Adaptive3dGeometry {
  int64_t volumes;  // n * c
  int64_t in[3], out[3];  // (d, h, w)
};
static_assert(sizeof(Adaptive3dGeometry) <= PrepareContext::kStateBytes, "state too large");


// Output row (od, oh, all ow) of one volume x.
template <typename T>
void adaptive_row(const Adaptive3dGeometry& g, const T* x, int64_t od, int64_t oh, T* out) {
  const int64_t d0 = adaptive_window_start(od, g.out[0], g.in[0]), d1 = adaptive_window_end(od, g.out[0], g.in[0]);
  const int64_t h0 = adaptive_window_start(oh, g.out[1], g.in[1]), h1 = adaptive_window_end(oh, g.out[1], g.in[1]);
  for (int64_t ow = 0; ow < g.out[2]; ++ow) {
    const int64_t w0 = adaptive_window_start(ow, g.out[2], g.in[2]);
    const int64_t w1 = adaptive_window_end(ow, g.out[2], g.in[2]);
    double sum = 0.0;
    for (int64_t id = d0; id < d1; ++id) {
      for (int64_t ih = h0; ih < h1; ++ih) {
        const T* row = x + (id * g.in[1] + ih) * g.in[2];
        for (int64_t iw = w0; iw < w1; ++iw) sum += row[iw];
      }
    }
    out[ow] = static_cast<T>(sum / static_cast<double>((d1 - d0) * (h1 - h0) * (w1 - w0)));
  }
}

template <typename T>
Error adaptive_avg_pool3d_run(RunContext& ctx, EValue* const* args) {
  Adaptive3dGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  const T* in = args[0]->tensor.data_as<const T>();
  T* out = args[2]->tensor.data_as<T>();
  const int64_t vol_in = g.in[0] * g.in[1] * g.in[2];
  const int64_t rows = g.volumes * g.out[0] * g.out[1];
  ctx.parallel_for(rows, 16, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t oh = r % g.out[1], od = (r / g.out[1]) % g.out[0];
      adaptive_row(g, in + r / (g.out[1] * g.out[0]) * vol_in, od, oh, out + r * g.out[2]);
    }
  });
  return Error::Ok;
}

}  // namespace

static Error adaptive_avg_pool3d_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& x = args[0]->tensor;
  switch (x.dtype) {
    case ScalarType::Float32: ctx.set_run(adaptive_avg_pool3d_run<float>); break;
    case ScalarType::Float64: ctx.set_run(adaptive_avg_pool3d_run<double>); break;
    default: return fail_dtype(ctx, "self", x.dtype);
  }
  TERN_CHECK_OK(expect_dtype(ctx, args[2]->tensor, "out", x.dtype));
  const int d = x.dim;
  if (d != 4 && d != 5) {
    return ctx.fail(Error::InvalidProgram, "self must be 4-d or 5-d, got %d-d", d);
  }
  for (int k = d - 4; k < d; ++k) {
    if (x.sizes[k] == 0) return ctx.fail(Error::InvalidProgram, "self dim %d is empty", k);
  }
  int64_t osz[3];
  TERN_CHECK_OK(read_int_list(ctx, *args[1], "output_size", 3, false, osz));
  Adaptive3dGeometry g;
  g.volumes = d == 5 ? x.sizes[0] * x.sizes[1] : x.sizes[0];
  int64_t out_sizes[5];
  for (int k = 0; k < d - 3; ++k) out_sizes[k] = x.sizes[k];
  for (int k = 0; k < 3; ++k) {
    if (osz[k] < 0 || osz[k] > INT32_MAX) {
      return ctx.fail(Error::InvalidProgram, "output_size %lld out of range", (long long)osz[k]);
    }
    g.in[k] = x.sizes[d - 3 + k];
    g.out[k] = out_sizes[d - 3 + k] = osz[k];
  }
  TERN_CHECK_OK(expect_sizes(ctx, args[2]->tensor, "out", out_sizes, d));
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error adaptive_avg_pool3d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, adaptive_avg_pool3d_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
