// Tensor: a non-owning view of a contiguous, row-major array.
//
// The data pointer refers to memory someone else owns: a planned arena (owned
// by the application), a constant in the loaded file (owned by the Program's
// DataLoader), or an application buffer. Shapes are static in format v1, so a
// Tensor's sizes never change after Method::load.
//
//   // sizes [N, C, H, W] -> element (n, c, h, w) at
//   // ((n * C + c) * H + h) * W + w
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/scalar_type.h"

namespace tern {

constexpr int kMaxDims = 8;

struct Tensor {
  void* data = nullptr;
  ScalarType dtype = ScalarType::Float32;
  int32_t dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t numel = 1;  // product of sizes (1 for a 0-d tensor)

  size_t nbytes() const { return static_cast<size_t>(numel) * scalar_type_size(dtype); }
  int64_t size(int d) const { return sizes[d]; }

  template <typename T>
  T* data_as() const { return static_cast<T*>(data); }

  // Elements between consecutive indices of dimension d.
  int64_t stride(int d) const {
    int64_t s = 1;
    for (int i = dim - 1; i > d; --i) s *= sizes[i];
    return s;
  }
};

// True if both have the same dtype and sizes.
bool tensor_same_shape(const Tensor& a, const Tensor& b);

}  // namespace tern
