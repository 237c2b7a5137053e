#include "kernels/portable/util/broadcast.h"

#include <cstdio>

#include "kernels/portable/util/checks.h"

namespace tern {
namespace portable {
namespace {

// Size of input `in` along out dim d of an out of rank `rank` (right-aligned;
// 1 where the input has no such dim).
int64_t aligned_size(const ElemInput& in, int rank, int d) {
  int id = d - (rank - in.dim);
  return id >= 0 ? in.sizes[id] : 1;
}

void format_shape(const ElemInput& in, char* buf, size_t n) {
  size_t used = snprintf(buf, n, "[");
  for (int i = 0; i < in.dim && used < n; ++i) {
    used += snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)in.sizes[i]);
  }
  if (used < n) snprintf(buf + used, n - used, "]");
}

}  // namespace

Error expect_broadcast(PrepareContext& ctx, const ElemInput* inputs, const char* const* names,
                       int n, const Tensor& out) {
  int rank = 0;
  for (int k = 0; k < n; ++k) rank = inputs[k].dim > rank ? inputs[k].dim : rank;
  int64_t sizes[kMaxDims];
  for (int d = 0; d < rank; ++d) {
    sizes[d] = 1;
    int owner = 0;  // the input that set sizes[d]
    for (int k = 0; k < n; ++k) {
      int64_t s = aligned_size(inputs[k], rank, d);
      if (s == 1 || s == sizes[d]) continue;
      if (sizes[d] != 1) {
        char a[160], b[160];
        format_shape(inputs[owner], a, sizeof(a));
        format_shape(inputs[k], b, sizeof(b));
        return ctx.fail(Error::InvalidProgram, "%s %s and %s %s do not broadcast",
                        names[owner], a, names[k], b);
      }
      sizes[d] = s;
      owner = k;
    }
  }
  return expect_sizes(ctx, out, "out", sizes, rank);
}

Error prepare_binary(PrepareContext& ctx, Span<EValue* const> args, size_t num_args,
                     bool scalar_other, ScalarType* common) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, num_args));
  TERN_CHECK_OK(expect_elem_operand(ctx, args, 0, "self", !scalar_other));
  if (scalar_other) {
    TERN_CHECK_OK(expect_scalar(ctx, args, 1, "other"));
  } else {
    TERN_CHECK_OK(expect_elem_operand(ctx, args, 1, "other", true));
  }
  TERN_CHECK_OK(ctx.expect_tensor(args, num_args - 1));
  const ElemInput inputs[2] = {elem_input(*args[0]), elem_input(*args[1])};
  const char* const names[2] = {"self", "other"};
  TERN_CHECK_OK(expect_broadcast(ctx, inputs, names, 2, args[num_args - 1]->tensor));
  *common = result_type(args.data(), 2);
  return Error::Ok;
}

void broadcast_plan_init(BroadcastPlan* p, const Tensor& out, const ElemInput* inputs, int n) {
  // Walk out's dims from the innermost, giving each input its stride along the
  // dim (0 where it is broadcast), dropping size-1 dims and merging a dim into
  // the one inside it when, for every input, stepping it once equals walking
  // the whole inner dim. Kept dims are collected innermost first, then reversed.
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxBroadcastInputs][kMaxDims];
  int64_t running[kMaxBroadcastInputs];  // product of the input's sizes inside d
  for (int k = 0; k < n; ++k) running[k] = 1;
  int m = 0;
  for (int d = out.dim - 1; d >= 0; --d) {
    int64_t st[kMaxBroadcastInputs];
    for (int k = 0; k < n; ++k) {
      int64_t s = aligned_size(inputs[k], out.dim, d);
      st[k] = s == 1 ? 0 : running[k];
      running[k] *= s;
    }
    if (out.sizes[d] == 1) continue;
    bool merge = m > 0;
    for (int k = 0; merge && k < n; ++k) merge = st[k] == strides[k][m - 1] * sizes[m - 1];
    if (merge) {
      sizes[m - 1] *= out.sizes[d];
      continue;
    }
    sizes[m] = out.sizes[d];
    for (int k = 0; k < n; ++k) strides[k][m] = st[k];
    ++m;
  }
  if (m == 0) {  // 0-d out, or every dim is 1
    sizes[0] = 1;
    for (int k = 0; k < n; ++k) strides[k][0] = 0;
    m = 1;
  }
  p->dim = m;
  p->num_inputs = n;
  p->numel = out.numel;
  for (int i = 0; i < m; ++i) {
    p->sizes[i] = sizes[m - 1 - i];
    for (int k = 0; k < n; ++k) p->strides[k][i] = strides[k][m - 1 - i];
  }
}

}  // namespace portable
}  // namespace tern
