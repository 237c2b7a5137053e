// The gradients of 2-d pooling with respect to its input (core ATen ops):
//
// aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size,
//     int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad,
//     int? divisor_override) -> Tensor
//   args: [grad_output, self, kernel_size, stride, padding, ceil_mode,
//          count_include_pad, divisor_override, grad_input]
// aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self,
//     int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation,
//     bool ceil_mode, Tensor indices) -> Tensor
//   args: [grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
//          indices, grad_input]
// aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor
//   args: [grad_output, self, grad_input]
//
// float32 or float64 (float16 / bfloat16 staged through float32: each
// gradient summed in float32, rounded once), self [c, h, w] or [n, c, h, w];
// grad_output, self and grad_input share a dtype; grad_output has the pooled
// sizes, grad_input self's. Each output gradient is spread back over its window as
// the forward op gathered it: divided by the window's divisor (avg, the
// forward's rule in util/pool.h), or added at its argmax (max: `indices`,
// flat in the plane, as max_pool2d_with_indices returns them; an index
// outside the plane fails the run). Each input element receives a few terms,
// added in output order.
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"
#include "kernels/portable/util/pool.h"
#include "runtime/core/log.h"

namespace tern {
namespace portable {
namespace {

template <typename T>
Error avg_pool2d_backward_run(RunContext& ctx, EValue* const* args) {
  PoolGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  const T* gy = args[0]->tensor.data_as<const T>();
  T* gx = args[8]->tensor.data_as<T>();
  const int64_t plane = int64_t(g.h) * g.w;
  ctx.parallel_for(g.planes, 1, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      T* x = gx + p * plane;
      std::fill(x, x + plane, T(0));
      const T* y = gy + p * int64_t(g.oh) * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const AvgWindow a = avg_window_2d(g, oh, ow);
          if (a.empty()) continue;
          const T share = y[oh * g.ow + ow] / static_cast<T>(a.divisor);
          for (int64_t ih = a.h0; ih < a.h1; ++ih) {
            for (int64_t iw = a.w0; iw < a.w1; ++iw) x[ih * g.w + iw] += share;
          }
        }
      }
    }
  });
  return Error::Ok;
}

template <typename T>
Error max_pool2d_backward_run(RunContext& ctx, EValue* const* args) {
  PoolGeometry g;
  memcpy(&g, ctx.state(), sizeof(g));
  const T* gy = args[0]->tensor.data_as<const T>();
  const int64_t* idx = args[7]->tensor.data_as<const int64_t>();
  T* gx = args[8]->tensor.data_as<T>();
  const int64_t plane = int64_t(g.h) * g.w, oplane = int64_t(g.oh) * g.ow;
  for (int64_t p = 0; p < g.planes; ++p) {
    T* x = gx + p * plane;
    std::fill(x, x + plane, T(0));
    for (int64_t o = 0; o < oplane; ++o) {
      const int64_t i = idx[p * oplane + o];
      if (i < 0 || i >= plane) {
        TERN_LOG_ERROR("aten::max_pool2d_with_indices_backward: index %lld outside the %lld-element plane",
                       (long long)i, (long long)plane);
        return Error::ExecutionFailed;
      }
      x[i] += gy[p * oplane + o];
    }
  }
  return Error::Ok;
}

struct AdaptiveBackward {
  int64_t planes, h, w, oh, ow;
};

template <typename T>
Error adaptive_avg_pool2d_backward_run(RunContext& ctx, EValue* const* args) {
  AdaptiveBackward g;
  memcpy(&g, ctx.state(), sizeof(g));
  const T* gy = args[0]->tensor.data_as<const T>();
  T* gx = args[2]->tensor.data_as<T>();
  ctx.parallel_for(g.planes, 1, [&](RunContext&, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      T* x = gx + p * g.h * g.w;
      std::fill(x, x + g.h * g.w, T(0));
      const T* y = gy + p * g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t h0 = adaptive_window_start(oh, g.oh, g.h), h1 = adaptive_window_end(oh, g.oh, g.h);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t w0 = adaptive_window_start(ow, g.ow, g.w), w1 = adaptive_window_end(ow, g.ow, g.w);
          const T share = y[oh * g.ow + ow] / static_cast<T>((h1 - h0) * (w1 - w0));
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) x[ih * g.w + iw] += share;
          }
        }
      }
    }
  });
  return Error::Ok;
}

// Picks run_f32 or run_f64 by grad_output's dtype, which self and grad_input
// must share; grad_input has self's sizes.
Error check_grad_input(PrepareContext& ctx, const Tensor& self, const Tensor& grad_output, const Tensor& grad_input,
                       RunFn run_f32, RunFn run_f64) {
  switch (grad_output.dtype) {
    case ScalarType::Float32: ctx.set_run(run_f32); break;
    case ScalarType::Float64: ctx.set_run(run_f64); break;
    default: return fail_dtype(ctx, "grad_output", grad_output.dtype);
  }
  if (self.dtype != grad_output.dtype) return fail_dtype(ctx, "self", self.dtype);
  TERN_CHECK_OK(expect_dtype(ctx, grad_input, "grad_input", grad_output.dtype));
  return expect_sizes(ctx, grad_input, "grad_input", self.sizes, self.dim);
}

Error avg_pool2d_backward_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 9));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tag(args, 6, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 8));
  int32_t divisor = 0;
  TERN_CHECK_OK(read_divisor_override(ctx, *args[7], &divisor));
  const PoolArgs pa{args[2], args[3], args[4], nullptr, args[5]->b};
  PoolGeometry g;
  TERN_CHECK_OK(pool_prepare_geometry(ctx, args[1]->tensor, pa, args[0]->tensor, &g));
  TERN_CHECK_OK(check_grad_input(ctx, args[1]->tensor, args[0]->tensor, args[8]->tensor,
                                 avg_pool2d_backward_run<float>, avg_pool2d_backward_run<double>));
  g.count_include_pad = args[6]->b ? 1 : 0;
  g.divisor = divisor;
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

Error max_pool2d_with_indices_backward_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 9));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tag(args, 6, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 7));
  TERN_CHECK_OK(ctx.expect_tensor(args, 8));
  const PoolArgs pa{args[2], args[3], args[4], args[5], args[6]->b};
  PoolGeometry g;
  TERN_CHECK_OK(pool_prepare_geometry(ctx, args[1]->tensor, pa, args[0]->tensor, &g));
  TERN_CHECK_OK(check_grad_input(ctx, args[1]->tensor, args[0]->tensor, args[8]->tensor,
                                 max_pool2d_backward_run<float>, max_pool2d_backward_run<double>));
  TERN_CHECK_OK(expect_dtype(ctx, args[7]->tensor, "indices", ScalarType::Int64));
  TERN_CHECK_OK(expect_sizes(ctx, args[7]->tensor, "indices", args[0]->tensor.sizes, args[0]->tensor.dim));
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

Error adaptive_avg_pool2d_backward_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tensor(args, 2));
  const Tensor& gy = args[0]->tensor;
  const Tensor& self = args[1]->tensor;
  if (self.dim != 3 && self.dim != 4) return ctx.fail(Error::InvalidProgram, "self must be 3-d or 4-d, got %d-d", self.dim);
  if (gy.dim != self.dim) return ctx.fail(Error::InvalidProgram, "grad_output must be %d-d, got %d-d", self.dim, gy.dim);
  for (int d = 0; d < self.dim - 2; ++d) {
    if (gy.sizes[d] != self.sizes[d]) {
      return ctx.fail(Error::InvalidProgram, "grad_output dim %d is %lld, self's %lld", d, (long long)gy.sizes[d],
                      (long long)self.sizes[d]);
    }
  }
  TERN_CHECK_OK(check_grad_input(ctx, self, gy, args[2]->tensor, adaptive_avg_pool2d_backward_run<float>,
                                 adaptive_avg_pool2d_backward_run<double>));
  AdaptiveBackward g{self.numel / (self.sizes[self.dim - 2] * self.sizes[self.dim - 1] + (self.numel == 0)),
                     self.sizes[self.dim - 2], self.sizes[self.dim - 1], gy.sizes[gy.dim - 2], gy.sizes[gy.dim - 1]};
  if (g.oh <= 0 || g.ow <= 0 || g.h <= 0 || g.w <= 0) {
    return ctx.fail(Error::OperatorMissing, "empty planes are not supported");
  }
  memmove(ctx.state(), &g, sizeof(g));
  return Error::Ok;
}

}  // namespace

// float16 / bfloat16: staged through float32 (half_stage.h).
Error avg_pool2d_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, avg_pool2d_backward_prepare_f32, 1);
}

Error max_pool2d_with_indices_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, max_pool2d_with_indices_backward_prepare_f32, 1);
}

Error adaptive_avg_pool2d_backward_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, adaptive_avg_pool2d_backward_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
