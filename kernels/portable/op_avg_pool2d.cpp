// aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True,
//     int? divisor_override=None) -> Tensor
// args: [self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//        divisor_override, out]
//
// self [c, h, w] or [n, c, h, w]: float32, float64 (summed in double) or
// int64 (summed with wraparound, divided truncating toward zero), the dtypes
// of ATen's CPU kernel (float16 / bfloat16 staged through float32). The
// divisor is divisor_override if given, else the window clipped to the
// padded input (count_include_pad) or to the input itself; a window wholly
// in the padding gives 0, as in ATen's CPU kernel (util/pool.h).
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct AvgPool2d {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    PoolGeometry g;
    memcpy(&g, ctx.state(), sizeof(g));
    const T* in = args[0]->tensor.data_as<const T>();
    T* out = args[7]->tensor.data_as<T>();
    const int64_t plane_in = int64_t(g.h) * g.w;
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* x = in + p * plane_in;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const AvgWindow a = avg_window_2d(g, oh, ow);
          AvgPoolAcc<T> sum = 0;
          for (int64_t ih = a.h0; ih < a.h1; ++ih) {
            for (int64_t iw = a.w0; iw < a.w1; ++iw) sum += static_cast<AvgPoolAcc<T>>(x[ih * g.w + iw]);
          }
          *out++ = a.empty() ? T(0) : avg_pool_divide<T>(sum, a.divisor);
        }
      }
    }
    return Error::Ok;
  }
};

}  // namespace

static Error avg_pool2d_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  const RunFn run = select_avg_pool_run<AvgPool2d>(self.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  TERN_CHECK_OK(expect_dtype(ctx, args[7]->tensor, "out", self.dtype));
  int32_t divisor = 0;
  TERN_CHECK_OK(read_divisor_override(ctx, *args[6], &divisor));
  const PoolArgs pa{args[1], args[2], args[3], nullptr, args[4]->b};
  PoolGeometry g;
  TERN_CHECK_OK(pool_prepare_geometry(ctx, self, pa, args[7]->tensor, &g));
  g.count_include_pad = args[5]->b ? 1 : 0;
  g.divisor = divisor;
  memmove(ctx.state(), &g, sizeof(g));
  ctx.set_run(run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error avg_pool2d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, avg_pool2d_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
