// aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True,
//     int? divisor_override=None) -> Tensor
// args: [self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//        divisor_override, out]
//
// float32 self [c, h, w] or [n, c, h, w]. The divisor is divisor_override if
// given, else the window clipped to the padded input (count_include_pad) or
// to the input itself, as in ATen's CPU kernel.
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

Error avg_pool2d_run(RunContext& ctx, EValue* const* args) {
  PoolGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  const float* in = args[0]->tensor.data_as<const float>();
  float* out = args[7]->tensor.data_as<float>();
  const int64_t plane_in = int64_t(g.h) * g.w;
  for (int64_t p = 0; p < g.planes; ++p) {
    const float* x = in + p * plane_in;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const AvgWindow a = avg_window_2d(g, oh, ow);
        double sum = 0.0;
        for (int64_t ih = a.h0; ih < a.h1; ++ih) {
          for (int64_t iw = a.w0; iw < a.w1; ++iw) sum += x[ih * g.w + iw];
        }
        *out++ = a.empty() ? 0.f : static_cast<float>(sum / static_cast<double>(a.divisor));
      }
    }
  }
  return Error::Ok;
}

}  // namespace

static Error avg_pool2d_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  int32_t divisor = 0;
  TERN_CHECK_OK(read_divisor_override(ctx, *args[6], &divisor));
  const PoolArgs pa{args[1], args[2], args[3], nullptr, args[4]->b};
  PoolGeometry g;
  TERN_CHECK_OK(pool_prepare_geometry(ctx, args[0]->tensor, pa, args[7]->tensor, &g));
  g.count_include_pad = args[5]->b ? 1 : 0;
  g.divisor = divisor;
  memcpy(ctx.state(), &g, sizeof(g));
  ctx.set_run(avg_pool2d_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error avg_pool2d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, avg_pool2d_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
