// Attention for few query rows straight over k and v where they lie (a KV
// cache: no packing), written once in plain C++ and compiled per ISA
// (ukernels/<isa>/f32_attn_rows.cpp): the two halves around the softmax.
//
//   dots: s[r][j] = scale * sum_c q[r][c] * k[j][c]    r < g rows, j < n keys
//   wsum: y[r][c] = sum_j p[r][j] * v[j][c]             c < ev
//
// Each key's row is read once for all g query rows (the heads of a group
// that share it, grouped-query attention). Sums run over 16 independent
// lanes (c mod 16 in dots; in wsum the columns are the lanes), so the
// compiler vectorizes them for the file's ISA without reordering a sum.
#pragma once

#include <cstddef>

#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {
namespace {  // each including file's own copy, built with its flags (common/avx512.h says why)
namespace attn_rows {

constexpr size_t kMaxRows = 8;  // query rows a call takes (g)

// Keys 16 at a time: each key's 16 lane sums go into a column of part[r],
// then the 16 lanes are summed key-parallel (lane 0 to 15 in order), so
// no horizontal sum runs per key.
inline void dots(size_t g, size_t n, size_t e, const float* q, size_t q_stride, const float* k, size_t k_stride,
                 float scale, float* s, size_t s_stride) {
  float part[kMaxRows][16][16];  // [row][lane][key of the block]
  for (size_t j0 = 0; j0 < n; j0 += 16) {
    const size_t nb = n - j0 < 16 ? n - j0 : 16;
    for (size_t jj = 0; jj < 16; ++jj) {
      float acc[kMaxRows][16];
      for (size_t r = 0; r < g; ++r) {
        for (int l = 0; l < 16; ++l) acc[r][l] = 0.f;
      }
      if (jj < nb) {
        const float* kj = k + (j0 + jj) * k_stride;
        size_t c = 0;
        for (; c + 16 <= e; c += 16) {
          for (size_t r = 0; r < g; ++r) {
            const float* qr = q + r * q_stride + c;
            for (int l = 0; l < 16; ++l) acc[r][l] += qr[l] * kj[c + l];
          }
        }
        for (; c < e; ++c) {
          for (size_t r = 0; r < g; ++r) acc[r][c % 16] += q[r * q_stride + c] * kj[c];
        }
      }
      for (size_t r = 0; r < g; ++r) {
        for (int l = 0; l < 16; ++l) part[r][l][jj] = acc[r][l];
      }
    }
    for (size_t r = 0; r < g; ++r) {
      float sum[16];
      for (int jj = 0; jj < 16; ++jj) sum[jj] = part[r][0][jj];
      for (int l = 1; l < 16; ++l) {
        for (int jj = 0; jj < 16; ++jj) sum[jj] += part[r][l][jj];
      }
      for (size_t jj = 0; jj < nb; ++jj) s[r * s_stride + j0 + jj] = scale * sum[jj];
    }
  }
}

inline void wsum(size_t g, size_t n, size_t ev, const float* p, size_t p_stride, const float* v, size_t v_stride,
                 float* y, size_t y_stride) {
  for (size_t c0 = 0; c0 < ev; c0 += 64) {
    const size_t w = ev - c0 < 64 ? ev - c0 : 64;
    float acc[kMaxRows][64];
    for (size_t r = 0; r < g; ++r) {
      for (size_t l = 0; l < 64; ++l) acc[r][l] = 0.f;
    }
    for (size_t j = 0; j < n; ++j) {
      const float* vj = v + j * v_stride + c0;
      if (w == 64) {
        for (size_t r = 0; r < g; ++r) {
          const float pj = p[r * p_stride + j];
          for (size_t l = 0; l < 64; ++l) acc[r][l] += pj * vj[l];
        }
      } else {
        for (size_t r = 0; r < g; ++r) {
          const float pj = p[r * p_stride + j];
          for (size_t l = 0; l < w; ++l) acc[r][l] += pj * vj[l];
        }
      }
    }
    for (size_t r = 0; r < g; ++r) {
      for (size_t l = 0; l < w; ++l) y[r * y_stride + c0 + l] = acc[r][l];
    }
  }
}

}  // namespace attn_rows
}  // namespace
}  // namespace cpu
}  // namespace tern
