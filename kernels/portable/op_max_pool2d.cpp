// aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size,
//     int[2] stride=[], int[2] padding=0, int[2] dilation=1,
//     bool ceil_mode=False) -> (Tensor, Tensor)
// args: [self, kernel_size, stride, padding, dilation, ceil_mode, out, indices]
//
// self [c, h, w] or [n, c, h, w]: float32, float64 or any integer type but
// bool, as ATen's CPU kernel (float16 / bfloat16 staged through float32).
// indices (int64) are flat positions h_in * w + w_in within each input plane,
// as ATen returns them. NaN wins (the last NaN of a window), and ties keep
// the first maximum, as in ATen (util/pool.h: max_pool_takes).
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

// One output element: the window at input (ih0, iw0) with dilation steps.
template <typename T>
void max_window(const PoolGeometry& g, const T* x, int64_t ih0, int64_t iw0, T* out, int64_t* index) {
  const int64_t ih1 = std::min<int64_t>(ih0 + int64_t(g.kh - 1) * g.dh + 1, g.h);
  const int64_t iw1 = std::min<int64_t>(iw0 + int64_t(g.kw - 1) * g.dw + 1, g.w);
  while (ih0 < 0) ih0 += g.dh;
  while (iw0 < 0) iw0 += g.dw;
  int64_t best_index = ih0 * g.w + iw0;
  T best = max_pool_start<T>();
  for (int64_t ih = ih0; ih < ih1; ih += g.dh) {
    for (int64_t iw = iw0; iw < iw1; iw += g.dw) {
      const T v = x[ih * g.w + iw];
      if (max_pool_takes(v, best)) {
        best = v;
        best_index = ih * g.w + iw;
      }
    }
  }
  *out = best;
  *index = best_index;
}

struct MaxPool2d {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    PoolGeometry g;
    memcpy(&g, ctx.state(), sizeof(g));
    const T* in = args[0]->tensor.data_as<const T>();
    T* out = args[6]->tensor.data_as<T>();
    int64_t* indices = args[7]->tensor.data_as<int64_t>();
    const int64_t plane_in = int64_t(g.h) * g.w, plane_out = int64_t(g.oh) * g.ow;
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* x = in + p * plane_in;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t o = p * plane_out + oh * g.ow + ow;
          max_window(g, x, oh * g.sh - g.ph, ow * g.sw - g.pw, out + o, indices + o);
        }
      }
    }
    return Error::Ok;
  }
};

}  // namespace

static Error max_pool2d_with_indices_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  const RunFn run = select_max_pool_run<MaxPool2d>(self.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  TERN_CHECK_OK(expect_dtype(ctx, args[6]->tensor, "out", self.dtype));
  const PoolArgs pa{args[1], args[2], args[3], args[4], args[5]->b};
  PoolGeometry g;
  TERN_CHECK_OK(pool_prepare_geometry(ctx, self, pa, args[6]->tensor, &g));
  const Tensor& indices = args[7]->tensor;
  if (indices.dtype != ScalarType::Int64) return fail_dtype(ctx, "indices", indices.dtype);
  TERN_CHECK_OK(expect_sizes(ctx, indices, "indices", args[6]->tensor.sizes, args[6]->tensor.dim));
  memmove(ctx.state(), &g, sizeof(g));
  ctx.set_run(run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error max_pool2d_with_indices_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, max_pool2d_with_indices_prepare_f32, 2);
}

}  // namespace portable
}  // namespace tern
