#include "kernels/portable/util/upsample.h"

#include <cmath>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

// Output sizes must stay far below int64 overflow; real ones are tiny.
constexpr double kMaxOutSize = 4611686018427387904.0;  // 2^62

Error parse_output_size(PrepareContext& ctx, const EValue& v, int64_t* oh, int64_t* ow) {
  if (v.tag != Tag::IntList || v.ints.size() != 2) {
    return ctx.fail(Error::InvalidProgram, "output_size must be a list of 2 ints, got %s of %zu",
                    tag_name(v.tag), v.tag == Tag::IntList ? v.ints.size() : size_t(0));
  }
  *oh = v.ints[0];
  *ow = v.ints[1];
  return Error::Ok;
}

// out = floor(in * scale) per dim, as ATen's compute_output_size.
Error parse_scale_factors(PrepareContext& ctx, const EValue& v, UpsampleGeometry* g) {
  if (v.tag != Tag::DoubleList || v.doubles.size() != 2) {
    return ctx.fail(Error::InvalidProgram,
                    "scale_factors must be a list of 2 floats, got %s of %zu", tag_name(v.tag),
                    v.tag == Tag::DoubleList ? v.doubles.size() : size_t(0));
  }
  const int64_t in[2] = {g->h, g->w};
  int64_t* out[2] = {&g->oh, &g->ow};
  double* scale[2] = {&g->scale_h, &g->scale_w};
  for (int i = 0; i < 2; ++i) {
    const double s = v.doubles[i];
    const double size = static_cast<double>(in[i]) * s;
    if (!(s > 0.0) || !(size < kMaxOutSize)) {  // also rejects NaN and inf
      return ctx.fail(Error::InvalidProgram, "scale_factors[%d] = %g is not a usable scale", i, s);
    }
    *scale[i] = s;
    *out[i] = static_cast<int64_t>(size);
  }
  return Error::Ok;
}

}  // namespace

Error upsample2d_prepare_geometry(PrepareContext& ctx, const Tensor& input,
                                  const EValue& output_size, const EValue& scale_factors,
                                  const Tensor& out, UpsampleGeometry* g) {
  if (input.dim != 4) {
    return ctx.fail(Error::InvalidProgram, "input must be 4-d [n, c, h, w], got %d-d", input.dim);
  }
  *g = UpsampleGeometry();
  g->planes = input.sizes[0] * input.sizes[1];
  g->h = input.sizes[2];
  g->w = input.sizes[3];
  if (g->h <= 0 || g->w <= 0) {
    return ctx.fail(Error::InvalidProgram, "input h and w must be positive, got %lld, %lld",
                    (long long)g->h, (long long)g->w);
  }
  if (output_size.is_none() == scale_factors.is_none()) {
    return ctx.fail(Error::InvalidProgram,
                    "exactly one of output_size and scale_factors must be given");
  }
  if (!output_size.is_none()) {
    TERN_CHECK_OK(parse_output_size(ctx, output_size, &g->oh, &g->ow));
  } else {
    TERN_CHECK_OK(parse_scale_factors(ctx, scale_factors, g));
  }
  if (g->oh <= 0 || g->ow <= 0) {
    return ctx.fail(Error::InvalidProgram, "out height and width must be positive, got %lld, %lld",
                    (long long)g->oh, (long long)g->ow);
  }
  const int64_t sizes[4] = {input.sizes[0], input.sizes[1], g->oh, g->ow};
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, 4));
  return expect_dtype(ctx, out, "out", input.dtype);
}

double upsample_step(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) {
    return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  }
  return scale > 0.0 ? 1.0 / scale : static_cast<double>(in) / static_cast<double>(out);
}

}  // namespace portable
}  // namespace tern
