// aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size,
//     int[3] stride=[], int[3] padding=0, int[3] dilation=1,
//     bool ceil_mode=False) -> (Tensor, Tensor)
// args: [self, kernel_size, stride, padding, dilation, ceil_mode, out, indices]
//
// F.max_pool3d / nn.MaxPool3d (torch.export lowers max_pool3d to this op).
// self [c, d, h, w] or [n, c, d, h, w]: float32, float64 or any integer type
// but bool, as ATen's CPU kernel. indices (int64) are flat positions
// (id * h + ih) * w + iw within each input volume. NaN wins (the last NaN of
// a window), and ties keep the first maximum, as in ATen.
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

// The window whose first corner is input `start` (d, h, w; negative in the
// padding) of one volume x: its max and that max's flat index.
template <typename T>
void max_window(const Pool3dWindow& g, const Pool3dSizes& z, const T* x, const int64_t* start,
                T* out, int64_t* index) {
  int64_t i0[3], i1[3];
  for (int k = 0; k < 3; ++k) {
    i1[k] = std::min<int64_t>(start[k] + int64_t(g.k[k] - 1) * g.dil[k] + 1, z.in[k]);
    for (i0[k] = start[k]; i0[k] < 0;) i0[k] += g.dil[k];
  }
  int64_t best_index = (i0[0] * z.in[1] + i0[1]) * z.in[2] + i0[2];
  T best = max_pool_start<T>();
  for (int64_t id = i0[0]; id < i1[0]; id += g.dil[0]) {
    for (int64_t ih = i0[1]; ih < i1[1]; ih += g.dil[1]) {
      const int64_t row = (id * z.in[1] + ih) * z.in[2];
      for (int64_t iw = i0[2]; iw < i1[2]; iw += g.dil[2]) {
        const T v = x[row + iw];
        if (max_pool_takes(v, best)) {
          best = v;
          best_index = row + iw;
        }
      }
    }
  }
  *out = best;
  *index = best_index;
}

struct MaxPool3d {
  template <typename T>
  static Error run(RunContext& ctx, EValue* const* args) {
    Pool3dWindow g;
    memcpy(&g, ctx.state(), sizeof(g));
    const Pool3dSizes z = pool3d_sizes(args[0]->tensor, args[6]->tensor);
    const T* in = args[0]->tensor.data_as<const T>();
    T* out = args[6]->tensor.data_as<T>();
    int64_t* indices = args[7]->tensor.data_as<int64_t>();
    const int64_t vol_in = z.in[0] * z.in[1] * z.in[2];
    pool3d_for_each_window(ctx, g, z, [&](int64_t volume, int64_t o, const int64_t* i0) {
      max_window(g, z, in + volume * vol_in, i0, out + o, indices + o);
    });
    return Error::Ok;
  }
};

}  // namespace

static Error max_pool3d_with_indices_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 8));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  const Tensor& self = args[0]->tensor;
  const RunFn run = select_max_pool_run<MaxPool3d>(self.dtype);
  if (run == nullptr) return fail_dtype(ctx, "self", self.dtype);
  ctx.set_run(run);
  TERN_CHECK_OK(expect_dtype(ctx, args[6]->tensor, "out", self.dtype));
  const PoolArgs pa{args[1], args[2], args[3], args[4], args[5]->b};
  Pool3dWindow g;
  TERN_CHECK_OK(pool3d_prepare_window(ctx, self, pa, args[6]->tensor, &g));
  const Tensor& indices = args[7]->tensor;
  TERN_CHECK_OK(expect_dtype(ctx, indices, "indices", ScalarType::Int64));
  TERN_CHECK_OK(expect_sizes(ctx, indices, "indices", args[6]->tensor.sizes, args[6]->tensor.dim));
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error max_pool3d_with_indices_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, max_pool3d_with_indices_prepare_f32, 2);
}

}  // namespace portable
}  // namespace tern
