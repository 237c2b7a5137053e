// The block-quantized kernels in plain C++ (ukernels/qb.h has the
// definition they compute, step by step): the reference every other ISA
// matches bit for bit, and the fallback on any CPU.
#include <cmath>
#include <cstring>

#include "backends/cpu/ukernels/qb.h"

namespace tern {
namespace cpu {
namespace {

template <int F>
int32_t block_isum(const uint8_t* blk, const int8_t* q) {
  int32_t isum = 0;
  if (F == kQbQ8_0) {
    for (int t = 0; t < 32; ++t) isum += int32_t(int8_t(blk[2 + t])) * q[t];
    return isum;
  }
  const uint8_t* qs = blk + (F == kQbQ4_1 ? 4 : 2);
  const int32_t off = F == kQbQ4_0 ? 8 : 0;
  for (int t = 0; t < 16; ++t) {
    isum += (int32_t(qs[t] & 0xF) - off) * q[t];
    isum += (int32_t(qs[t] >> 4) - off) * q[16 + t];
  }
  return isum;
}

template <int F>
float row_dot(size_t k, const uint8_t* a, const uint8_t* w) {
  const size_t nb = k / kQbBlock;
  const int8_t* q = reinterpret_cast<const int8_t*>(a);
  const float* d = reinterpret_cast<const float*>(a + k);
  const int32_t* s = reinterpret_cast<const int32_t*>(a + k + 4 * nb);
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQbBlockBytes[F];
    const int32_t isum = block_isum<F>(blk, q + b * kQbBlock);
    float t = (qb_half(blk) * d[b]) * float(isum);
    if (F == kQbQ4_1) t = t + qb_half(blk + 2) * (d[b] * float(s[b]));
    acc[b % 8] = acc[b % 8] + t;
  }
  return qb_combine(acc);
}

template <int F>
void gemm(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride, const uint8_t* w, size_t w_stride,
          float* c, size_t c_stride) {
  for (size_t j = 0; j < nc; ++j) {
    for (size_t i = 0; i < mr; ++i) c[i * c_stride + j] = row_dot<F>(k, a + i * a_stride, w + j * w_stride);
  }
}

}  // namespace

void qb_quantize_ukernel__scalar(size_t k, const float* x, uint8_t* row) {
  const size_t nb = k / kQbBlock;
  int8_t* q = reinterpret_cast<int8_t*>(row);
  float* d = reinterpret_cast<float*>(row + k);
  int32_t* s = reinterpret_cast<int32_t*>(row + k + 4 * nb);
  for (size_t b = 0; b < nb; ++b, x += kQbBlock, q += kQbBlock) {
    float amax = 0.0f;
    for (size_t j = 0; j < kQbBlock; ++j) {
      const float v = std::fabs(x[j]);
      amax = v > amax ? v : amax;  // a NaN compares false: skipped
    }
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t sum = 0;
    for (size_t j = 0; j < kQbBlock; ++j) {
      float v = x[j] * id;
      v = v > -127.0f ? v : -127.0f;  // a NaN becomes -127, as x86's max(v, -127) makes it
      v = v < 127.0f ? v : 127.0f;
      q[j] = int8_t(__builtin_nearbyintf(v));
      sum += q[j];
    }
    d[b] = db;
    s[b] = sum;
  }
  const size_t used = k + 8 * nb;
  memset(row + used, 0, qb_row_bytes(k) - used);
}

void qb_q4_0_gemm_ukernel_4x1__scalar(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                      const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q4_1_gemm_ukernel_4x1__scalar(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                      const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ4_1>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}
void qb_q8_0_gemm_ukernel_4x1__scalar(size_t mr, size_t nc, size_t k, const uint8_t* a, size_t a_stride,
                                      const uint8_t* w, size_t w_stride, float* c, size_t c_stride) {
  gemm<kQbQ8_0>(mr, nc, k, a, a_stride, w, w_stride, c, c_stride);
}

}  // namespace cpu
}  // namespace tern
