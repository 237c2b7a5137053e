// aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size,
//     int[2] dilation, int[2] padding, int[2] stride) -> Tensor
// args: [self, output_size, kernel_size, dilation, padding, stride, out]
//
// F.fold / nn.Fold: sums sliding blocks back into an image, the inverse
// layout of im2col (F.unfold). self [n, c * kh * kw, L] or [c * kh * kw, L]
// with L = bh * bw blocks, bh = (oh + 2 * ph - dh * (kh - 1) - 1) / sh + 1
// (bw likewise) -> out [n, c, oh, ow] or [c, oh, ow]:
//
//   out[c, i * sh - ph + ki * dh, j * sw - pw + kj * dw]
//       += self[(c * kh + ki) * kw + kj, i * bw + j]
//
// over the positions inside the image, added in ATen's order (so floats
// give the same bits). float32, float64 and bool (sums are logical or), the
// dtypes of ATen's CPU kernel.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/conv.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

struct Col2imState {
  int32_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t bh, bw;  // blocks along h and w
};

template <typename T>
void accumulate(T& dst, T v) { dst += v; }
template <>
void accumulate<uint8_t>(uint8_t& dst, uint8_t v) { dst |= v; }  // bool

// One output plane [oh, ow] from its kh * kw rows of col, each [bh * bw].
template <typename T>
void fold_plane(const Col2imState& g, const T* col, int64_t oh, int64_t ow, T* out) {
  memset(out, 0, static_cast<size_t>(oh * ow) * sizeof(T));
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    for (int64_t kj = 0; kj < g.kw; ++kj, col += g.bh * g.bw) {
      for (int64_t i = 0; i < g.bh; ++i) {
        const int64_t y = i * g.sh - g.ph + ki * g.dh;
        if (y < 0 || y >= oh) continue;
        for (int64_t j = 0; j < g.bw; ++j) {
          const int64_t x = j * g.sw - g.pw + kj * g.dw;
          if (x >= 0 && x < ow) accumulate(out[y * ow + x], col[i * g.bw + j]);
        }
      }
    }
  }
}

template <typename T>
Error col2im_run(RunContext& ctx, EValue* const* args) {
  Col2imState g;
  memcpy(&g, ctx.state(), sizeof(g));
  const Tensor& out = args[6]->tensor;
  const int64_t oh = out.sizes[out.dim - 2], ow = out.sizes[out.dim - 1];
  const int64_t planes = out.numel == 0 ? 0 : out.numel / (oh * ow);
  const T* col = args[0]->tensor.data_as<const T>();
  T* dst = out.data_as<T>();
  const int64_t col_plane = int64_t(g.kh) * g.kw * g.bh * g.bw;
  ctx.parallel_for(planes, 1, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      fold_plane(g, col + p * col_plane, oh, ow, dst + p * oh * ow);
    }
  });
  return Error::Ok;
}

// output_size, kernel_size, dilation, padding, stride as (h, w), range-checked.
Error read_geometry(PrepareContext& ctx, Span<EValue* const> args, int64_t (*v)[2]) {
  const char* names[] = {"output_size", "kernel_size", "dilation", "padding", "stride"};
  for (int i = 0; i < 5; ++i) {
    TERN_CHECK_OK(read_int_list(ctx, *args[1 + i], names[i], 2, false, v[i]));
    for (int j = 0; j < 2; ++j) {
      if (v[i][j] < (i == 3 ? 0 : 1) || v[i][j] > INT32_MAX) {
        return ctx.fail(Error::InvalidProgram, "%s %lld out of range", names[i],
                        (long long)v[i][j]);
      }
    }
  }
  return Error::Ok;
}

}  // namespace

static Error col2im_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 6));
  const Tensor& self = args[0]->tensor;
  switch (self.dtype) {
    case ScalarType::Float32: ctx.set_run(col2im_run<float>); break;
    case ScalarType::Float64: ctx.set_run(col2im_run<double>); break;
    case ScalarType::Bool: ctx.set_run(col2im_run<uint8_t>); break;
    default: return fail_dtype(ctx, "self", self.dtype);
  }
  TERN_CHECK_OK(expect_dtype(ctx, args[6]->tensor, "out", self.dtype));
  const int d = self.dim;
  if ((d != 2 && d != 3) || self.sizes[d - 2] == 0 || self.sizes[d - 1] == 0) {
    return ctx.fail(Error::InvalidProgram, "self must be a 2-d or 3-d tensor with non-empty "
                    "columns and blocks (only the batch may be empty)");
  }
  int64_t v[5][2];  // output_size, kernel_size, dilation, padding, stride
  TERN_CHECK_OK(read_geometry(ctx, args, v));
  const int64_t taps = v[1][0] * v[1][1];
  const int64_t bh = conv_output_size(v[0][0], v[1][0], v[4][0], v[3][0], v[2][0]);
  const int64_t bw = conv_output_size(v[0][1], v[1][1], v[4][1], v[3][1], v[2][1]);
  if (self.sizes[d - 2] % taps != 0 || bh < 1 || bw < 1 || self.sizes[d - 1] != bh * bw) {
    return ctx.fail(Error::InvalidProgram,
                    "self [.., %lld, %lld] does not hold %lld x %lld blocks of %lld taps",
                    (long long)self.sizes[d - 2], (long long)self.sizes[d - 1], (long long)bh,
                    (long long)bw, (long long)taps);
  }
  int64_t out_sizes[4];
  if (d == 3) out_sizes[0] = self.sizes[0];
  out_sizes[d - 2] = self.sizes[d - 2] / taps;
  out_sizes[d - 1] = v[0][0];
  out_sizes[d] = v[0][1];
  TERN_CHECK_OK(expect_sizes(ctx, args[6]->tensor, "out", out_sizes, d + 1));
  const Col2imState g{int32_t(v[1][0]), int32_t(v[1][1]), int32_t(v[2][0]), int32_t(v[2][1]),
                      int32_t(v[3][0]), int32_t(v[3][1]), int32_t(v[4][0]), int32_t(v[4][1]),
                      bh, bw};
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error col2im_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, col2im_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
