// aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[],
//     int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True,
//     int? divisor_override=None) -> Tensor
// args: [self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//        divisor_override, out]
//
// F.avg_pool3d / nn.AvgPool3d. self [c, d, h, w] or [n, c, d, h, w]:
// float32, float64 (summed in double) or int64 (summed with wraparound,
// divided truncating toward zero), the dtypes of ATen's CPU kernel. The divisor is
// divisor_override if given, else the window clipped to the padded input
// (count_include_pad) or to the input itself; a window wholly in the
// padding gives 0, as in ATen's cpu_avg_pool.
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

// One output element: the window whose first corner is input i0 (d, h, w).
template <typename T>
T avg_window(const Pool3dWindow& g, const Pool3dSizes& z, const T* x, const int64_t* i0) {
  int64_t lo[3], hi[3], padded = 1, inside = 1;
  for (int k = 0; k < 3; ++k) {
    hi[k] = std::min<int64_t>(i0[k] + g.k[k], z.in[k] + g.p[k]);
    padded *= hi[k] - i0[k];
    lo[k] = std::max<int64_t>(i0[k], 0);
    hi[k] = std::min<int64_t>(hi[k], z.in[k]);
    if (lo[k] >= hi[k]) return T(0);
    inside *= hi[k] - lo[k];
  }
  AvgPoolAcc<T> sum = 0;
  for (int64_t id = lo[0]; id < hi[0]; ++id) {
    for (int64_t ih = lo[1]; ih < hi[1]; ++ih) {
      const T* row = x + (id * z.in[1] + ih) * z.in[2];
      for (int64_t iw = lo[2]; iw < hi[2]; ++iw) sum += static_cast<AvgPoolAcc<T>>(row[iw]);
    }
  }
  return avg_pool_divide<T>(sum, g.divisor != 0 ? g.divisor : g.count_include_pad ? padded : inside);
}

struct AvgPool3d {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    Pool3dWindow g;
    memcpy(&g, ctx.state(), sizeof(g));
    const Pool3dSizes z = pool3d_sizes(args[0]->tensor, args[7]->tensor);
    const T* in = args[0]->tensor.data_as<const T>();
    T* out = args[7]->tensor.data_as<T>();
    const int64_t vol_in = z.in[0] * z.in[1] * z.in[2];
    pool3d_for_each_window(ctx, g, z, [&](int64_t volume, int64_t o, const int64_t* i0) {
      out[o] = avg_window<T>(g, z, in + volume * vol_in, i0);
    });
    return Error::Ok;
  }
};

}  // namespace

static Error avg_pool3d_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  const RunFn run = select_avg_pool_run<AvgPool3d>(self.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  ctx.set_run(run);
  TERN_CHECK_OK(expect_dtype(ctx, args[7]->tensor, "out", self.dtype));
  int32_t divisor = 0;
  TERN_CHECK_OK(read_divisor_override(ctx, *args[6], &divisor));
  const PoolArgs pa{args[1], args[2], args[3], nullptr, args[4]->b};
  Pool3dWindow g;
  TERN_CHECK_OK(pool3d_prepare_window(ctx, self, pa, args[7]->tensor, &g));
  g.count_include_pad = args[5]->b ? 1 : 0;
  g.divisor = divisor;
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error avg_pool3d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, avg_pool3d_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
