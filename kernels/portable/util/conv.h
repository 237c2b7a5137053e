// 2-d window geometry and the convolution building blocks (float32, NCHW).
//
// aten::convolution runs as one GEMM per image and group:
//
//   out[oc_g, pixels] = weight[oc_g, cg * kh * kw] x col[cg * kh * kw, pixels]
//
// where col is the im2col matrix of the group's input channels, built in
// scratch a chunk of output pixels at a time (conv_im2col_cols) so scratch
// stays bounded for large images. A 1x1, stride-1, unpadded convolution needs
// no col (the input already is that matrix), and a depthwise convolution
// (groups == c == oc) runs as a direct loop per channel plane
// (conv_depthwise_plane). Threads split the output pixels of all images and
// groups (GEMM path) or the channel planes (depthwise).
//
// A 1-d convolution (input [n, c, l]) is the 2-d case with h = kh = 1.
#pragma once

#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

// Fits in PrepareContext::state(); all fields are validated by prepare.
struct ConvGeometry {
  int32_t n, c, h, w;  // input [n, c, h, w]
  int32_t oc, oh, ow;  // output [n, oc, oh, ow]
  int32_t kh, kw;      // weight [oc, c / groups, kh, kw]
  int32_t sh, sw;      // stride
  int32_t ph, pw;      // padding (zeros), each side
  int32_t dh, dw;      // dilation
  int32_t groups;
};
static_assert(sizeof(ConvGeometry) <= PrepareContext::kStateBytes,
              "ConvGeometry must fit in state");

// Reads an int[] argument with 1 or `n` entries (one entry is repeated, as
// ATen does) into out[0..n). With allow_empty, an empty list gives n zeros.
Error read_int_list(PrepareContext& ctx, const EValue& v, const char* name, int n, bool allow_empty,
                    int64_t* out);

// floor((in + 2 * pad - dilation * (k - 1) - 1) / stride) + 1 (may be <= 0).
int64_t conv_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation);

// The first output column a window tap at input offset `off` (= kj * dw - pw)
// reads in range, and one past the last: 0 <= o * stride + off < in.
void conv_tap_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t* lo, int64_t* hi);

// Output pixels per im2col chunk (the whole image when it fits the budget).
int64_t conv_im2col_cols(const ConvGeometry& g);

// col[r][t] for rows r = (ci * kh + ki) * kw + kj, ci < cg, and output pixels
// q = q0 + t, t < cols, of the channels `in` [cg, h, w]; zero where the tap
// falls in the padding.
void conv_im2col(const ConvGeometry& g, const float* in, int64_t cg, int64_t q0, int64_t cols,
                 float* col);

// One channel of one image of a depthwise convolution: x [h, w], its taps
// [kh, kw], its bias value, y [oh, ow].
void conv_depthwise_plane(const ConvGeometry& g, const float* x, const float* taps, float bias,
                          float* y);

}  // namespace portable
}  // namespace tern
