#include "kernels/portable/util/pool.h"

#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/conv.h"

namespace tern {
namespace portable {
namespace {

// Rounds toward negative infinity (ATen's div_rtn).
int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// kernel, stride, padding, dilation (win[0..3]) for n = 2 (h, w) or 3
// (d, h, w) dims, range-checked as ATen's pool2d/pool3d_shape_check.
Error read_window(PrepareContext& ctx, const PoolArgs& a, int n, int64_t (*win)[3]) {
  TERN_CHECK_OK(read_int_list(ctx, *a.kernel_size, "kernel_size", n, false, win[0]));
  TERN_CHECK_OK(read_int_list(ctx, *a.stride, "stride", n, true, win[1]));
  if (a.stride->ints.empty()) memmove(win[1], win[0], sizeof(win[0]));
  TERN_CHECK_OK(read_int_list(ctx, *a.padding, "padding", n, false, win[2]));
  for (int j = 0; j < n; ++j) win[3][j] = 1;
  if (a.dilation) TERN_CHECK_OK(read_int_list(ctx, *a.dilation, "dilation", n, false, win[3]));
  const char* names[] = {"kernel_size", "stride", "padding", "dilation"};
  for (int i = 0; i < 4; ++i) {
    const int64_t lo = i == 2 ? 0 : 1;
    for (int j = 0; j < n; ++j) {
      if (win[i][j] < lo || win[i][j] > INT32_MAX) {
        return ctx.fail(Error::InvalidProgram, "%s %lld out of range", names[i],
                        (long long)win[i][j]);
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    if (win[2][j] > win[0][j] / 2) {
      return ctx.fail(Error::InvalidProgram, "padding %lld exceeds half the kernel %lld (dim %d)",
                      (long long)win[2][j], (long long)win[0][j], j);
    }
  }
  return Error::Ok;
}

}  // namespace

int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = div_floor(span, stride) + 1;
  // the last window must start inside the input or its left padding
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

Error pool_prepare_geometry(PrepareContext& ctx, const Tensor& self, const PoolArgs& a,
                            const Tensor& out, PoolGeometry* g) {
  if (self.dim != 3 && self.dim != 4) {
    return ctx.fail(Error::InvalidProgram, "self must be 3-d or 4-d, got %d-d", self.dim);
  }
  const int d = self.dim;
  const int64_t planes = d == 4 ? self.sizes[0] * self.sizes[1] : self.sizes[0];
  const int64_t h = self.sizes[d - 2], w = self.sizes[d - 1];
  if (self.sizes[d - 3] == 0 || h == 0 || w == 0 || h > INT32_MAX || w > INT32_MAX) {
    return ctx.fail(Error::InvalidProgram, "self has an empty or oversized plane");
  }
  int64_t win[4][3];
  TERN_CHECK_OK(read_window(ctx, a, 2, win));
  const int64_t oh = pool_output_size(h, win[0][0], win[2][0], win[1][0], win[3][0], a.ceil_mode);
  const int64_t ow = pool_output_size(w, win[0][1], win[2][1], win[1][1], win[3][1], a.ceil_mode);
  if (oh < 1 || ow < 1) {
    return ctx.fail(Error::InvalidProgram, "output size %lldx%lld is too small",
                    (long long)oh, (long long)ow);
  }
  int64_t out_sizes[4];
  for (int i = 0; i < d - 2; ++i) out_sizes[i] = self.sizes[i];
  out_sizes[d - 2] = oh, out_sizes[d - 1] = ow;
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", out_sizes, d));
  *g = PoolGeometry{planes, int32_t(h), int32_t(w), int32_t(oh), int32_t(ow),
                    int32_t(win[0][0]), int32_t(win[0][1]), int32_t(win[1][0]), int32_t(win[1][1]),
                    int32_t(win[2][0]), int32_t(win[2][1]), int32_t(win[3][0]), int32_t(win[3][1]),
                    0, 0};
  return Error::Ok;
}

Error read_divisor_override(PrepareContext& ctx, const EValue& v, int32_t* divisor) {
  if (!v.is_none() && !v.is_int()) {
    return ctx.fail(Error::InvalidProgram, "divisor_override must be an int or None, got %s",
                    tag_name(v.tag));
  }
  if (v.is_int() && (v.i == 0 || v.i > INT32_MAX || v.i < INT32_MIN)) {
    return ctx.fail(Error::InvalidProgram, "divisor_override %lld out of range", (long long)v.i);
  }
  *divisor = v.is_int() ? static_cast<int32_t>(v.i) : 0;
  return Error::Ok;
}

Pool3dSizes pool3d_sizes(const Tensor& self, const Tensor& out) {
  const int d = self.dim;
  Pool3dSizes z;
  z.volumes = d == 5 ? self.sizes[0] * self.sizes[1] : self.sizes[0];
  for (int k = 0; k < 3; ++k) z.in[k] = self.sizes[d - 3 + k], z.out[k] = out.sizes[d - 3 + k];
  return z;
}

Error pool3d_prepare_window(PrepareContext& ctx, const Tensor& self, const PoolArgs& a,
                            const Tensor& out, Pool3dWindow* w) {
  const int d = self.dim;
  if (d != 4 && d != 5) {
    return ctx.fail(Error::InvalidProgram, "self must be 4-d or 5-d, got %d-d", d);
  }
  for (int k = d - 4; k < d; ++k) {
    if (self.sizes[k] == 0 || self.sizes[k] > INT32_MAX) {
      return ctx.fail(Error::InvalidProgram, "self dim %d is empty or oversized", k);
    }
  }
  int64_t win[4][3];
  TERN_CHECK_OK(read_window(ctx, a, 3, win));
  int64_t out_sizes[5];
  for (int k = 0; k < d; ++k) out_sizes[k] = self.sizes[k];
  for (int k = 0; k < 3; ++k) {
    const int64_t o = pool_output_size(self.sizes[d - 3 + k], win[0][k], win[2][k], win[1][k],
                                       win[3][k], a.ceil_mode);
    if (o < 1) {
      return ctx.fail(Error::InvalidProgram, "output size %lld is too small", (long long)o);
    }
    out_sizes[d - 3 + k] = o;
  }
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", out_sizes, d));
  memset(w, 0, sizeof(*w));
  for (int k = 0; k < 3; ++k) {
    w->k[k] = int32_t(win[0][k]), w->s[k] = int32_t(win[1][k]);
    w->p[k] = int32_t(win[2][k]), w->dil[k] = int32_t(win[3][k]);
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
