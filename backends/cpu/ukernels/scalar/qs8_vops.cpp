// qs8_quantize_ukernel__scalar, qs8_binary_ukernel__scalar and
// qs8_pool_ukernel__scalar (ukernels/qs8.h).
#include "backends/cpu/ukernels/qs8.h"

namespace tern {
namespace cpu {
namespace {

// round(v) + zero clamped to [qmin, qmax], as round(v clamped to [qmin -
// zero, qmax - zero]) + zero (the bounds are integers): once clamped, adding
// and subtracting 1.5 * 2^23 rounds half to even without a call to
// nearbyint (baseline x86-64 has no instruction for it). NaN -> qmin.
inline int8_t to_int8(float v, float zero, float qmin, float qmax) {
  const float lo = qmin - zero, hi = qmax - zero, magic = 12582912.0f;
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<int8_t>((v + magic) - magic + zero);
}

}  // namespace

void f32_minmax_ukernel__scalar(size_t n, const float* x, float* lo, float* hi) {
  float l = x[0], h = x[0];
  for (size_t i = 1; i < n; ++i) {  // a NaN compares false: skipped
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l, *hi = h;
}

void qs8_quantize_ukernel__scalar(size_t n, const float* x, int8_t* y, const Qs8QuantizeParams& p) {
  for (size_t i = 0; i < n; ++i) y[i] = to_int8(x[i] * p.inv_scale, p.zero_point, p.qmin, p.qmax);
}

void qs8_binary_ukernel__scalar(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const Qs8BinaryParams& p) {
  for (size_t i = 0; i < n; ++i) {
    const float fa = (static_cast<float>(a[i]) - p.a_zero) * p.a_scale;
    const float fb = (static_cast<float>(b[i]) - p.b_zero) * p.b_scale;
    y[i] = to_int8((p.mul ? fa * fb : fa + fb) * p.y_inv_scale, p.y_zero, p.qmin, p.qmax);
  }
}

void qs8_pool_ukernel__scalar(size_t channels, size_t pixels, size_t ks, const int8_t* const* in, const float* count,
                              int8_t* out, size_t out_stride, const Qs8PoolParams& p) {
  for (size_t px = 0; px < pixels; ++px, in += ks, out += out_stride) {
    for (size_t j = 0; j < channels; ++j) {
      float v;
      if (count == nullptr) {
        int32_t m = in[0][j];
        for (size_t t = 1; t < ks; ++t) m = in[t][j] > m ? in[t][j] : m;
        v = (static_cast<float>(m) - p.x_zero) * p.x_scale;
      } else {
        v = 0.0f;
        for (size_t t = 0; t < ks; ++t) v += (static_cast<float>(in[t][j]) - p.x_zero) * p.x_scale;
        v /= count[px];
      }
      out[j] = to_int8(v * p.y_inv_scale, p.y_zero, p.qmin, p.qmax);
    }
  }
}

}  // namespace cpu
}  // namespace tern
