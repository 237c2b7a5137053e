// Winograd F(2x2, 3x3) transforms (backends/cpu/ops/conv.cpp) over the
// channels of one tile, written once and compiled per ISA (the loops over
// channels have no branches, so each ISA's compiler vectorizes them):
//
//   input:  v[t * stride + k] = (B^T d B)[t] for channel k, t = 4 r + s,
//           d[r][s] = in[4 r + s][k] (a 4 x 4 input patch, zeros outside x)
//   output: out[2 r + s][k] = clamp((A^T M A)[r][s] + bias[k] + res[2 r + s][k]),
//           M[t] = m[t * stride + k]
//
// with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1].
#pragma once

#include <cstddef>

#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace winograd {

constexpr size_t kBlock = 16;  // channels per step: fixed-size loops over local arrays vectorize

// Channels [k, k + n) of one tile (n <= kBlock).
inline void input_block(const float* const* in, size_t k, size_t n, float* v, size_t stride) {
  float d[16][kBlock], w[16][kBlock];
  if (n == kBlock) {  // the common case without per-lane conditions, so that it vectorizes
    for (int t = 0; t < 16; ++t)
      for (size_t l = 0; l < kBlock; ++l) d[t][l] = in[t][k + l];
  } else {
    for (int t = 0; t < 16; ++t)
      for (size_t l = 0; l < kBlock; ++l) d[t][l] = l < n ? in[t][k + l] : 0.f;
  }
  for (int s = 0; s < 4; ++s)  // B^T d
    for (size_t l = 0; l < kBlock; ++l) {
      const float d0 = d[s][l], d1 = d[4 + s][l], d2 = d[8 + s][l], d3 = d[12 + s][l];
      w[s][l] = d0 - d2, w[4 + s][l] = d1 + d2, w[8 + s][l] = d2 - d1, w[12 + s][l] = d1 - d3;
    }
  for (int r = 0; r < 4; ++r)  // (B^T d) B
    for (size_t l = 0; l < kBlock; ++l) {
      const float u0 = w[4 * r][l], u1 = w[4 * r + 1][l], u2 = w[4 * r + 2][l], u3 = w[4 * r + 3][l];
      d[4 * r][l] = u0 - u2, d[4 * r + 1][l] = u1 + u2, d[4 * r + 2][l] = u2 - u1, d[4 * r + 3][l] = u1 - u3;
    }
  for (int t = 0; t < 16; ++t) {
    float* row = v + size_t(t) * stride + k;
    if (n == kBlock) {
      for (size_t l = 0; l < kBlock; ++l) row[l] = d[t][l];
    } else {
      for (size_t l = 0; l < n; ++l) row[l] = d[t][l];
    }
  }
}

inline void input(const float* const* in, size_t c, float* v, size_t stride) {
  for (size_t k = 0; k < c; k += kBlock) input_block(in, k, c - k < kBlock ? c - k : kBlock, v, stride);
}

inline void output_block(const float* m, size_t stride, size_t k, size_t n, const float* bias, float* const* out,
                         const float* const* res, MinMax clamp) {
  float q[16][kBlock], p[8][kBlock], y[4][kBlock], b[kBlock], rs[4][kBlock];
  if (n == kBlock) {  // the common case without per-lane conditions, so that it vectorizes
    for (int t = 0; t < 16; ++t)
      for (size_t l = 0; l < kBlock; ++l) q[t][l] = m[size_t(t) * stride + k + l];
    for (size_t l = 0; l < kBlock; ++l) b[l] = bias[k + l];
    for (int o = 0; o < 4; ++o)
      for (size_t l = 0; l < kBlock; ++l) rs[o][l] = res[o][k + l];
  } else {
    for (int t = 0; t < 16; ++t)
      for (size_t l = 0; l < kBlock; ++l) q[t][l] = l < n ? m[size_t(t) * stride + k + l] : 0.f;
    for (size_t l = 0; l < kBlock; ++l) b[l] = l < n ? bias[k + l] : 0.f;
    for (int o = 0; o < 4; ++o)
      for (size_t l = 0; l < kBlock; ++l) rs[o][l] = l < n ? res[o][k + l] : 0.f;
  }
  for (int s = 0; s < 4; ++s)  // A^T M
    for (size_t l = 0; l < kBlock; ++l) {
      const float m0 = q[s][l], m1 = q[4 + s][l], m2 = q[8 + s][l], m3 = q[12 + s][l];
      p[s][l] = m0 + m1 + m2, p[4 + s][l] = m1 - m2 - m3;
    }
  for (int r = 0; r < 2; ++r)  // (A^T M) A, + bias + residual, clamp
    for (size_t l = 0; l < kBlock; ++l) {
      float y0 = p[4 * r][l] + p[4 * r + 1][l] + p[4 * r + 2][l] + b[l] + rs[2 * r][l];
      float y1 = p[4 * r + 1][l] - p[4 * r + 2][l] - p[4 * r + 3][l] + b[l] + rs[2 * r + 1][l];
      y[2 * r][l] = y0 < clamp.min ? clamp.min : (y0 > clamp.max ? clamp.max : y0);
      y[2 * r + 1][l] = y1 < clamp.min ? clamp.min : (y1 > clamp.max ? clamp.max : y1);
    }
  if (n == kBlock) {
    for (int o = 0; o < 4; ++o)
      for (size_t l = 0; l < kBlock; ++l) out[o][k + l] = y[o][l];
  } else {
    for (int o = 0; o < 4; ++o)
      for (size_t l = 0; l < n; ++l) out[o][k + l] = y[o][l];
  }
}

inline void output(const float* m, size_t stride, size_t oc, const float* bias, float* const* out,
                   const float* const* res, MinMax clamp) {
  for (size_t k = 0; k < oc; k += kBlock) output_block(m, stride, k, oc - k < kBlock ? oc - k : kBlock, bias, out, res, clamp);
}

}  // namespace winograd
}  // namespace
}  // namespace cpu
}  // namespace tern
