#include "kernels/portable/util/checks.h"

#include <cstdint>
#include <cstdio>

namespace tern {
namespace portable {
namespace {

void format_sizes(const int64_t* sizes, int dim, char* buf, size_t n) {
  size_t used = snprintf(buf, n, "[");
  for (int i = 0; i < dim && used < n; ++i) {
    used += snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)sizes[i]);
  }
  if (used < n) snprintf(buf + used, n - used, "]");
}

// Python-style bound: None -> `none_value`, negative -> counted from the end,
// then clamped to [lo, size].
int64_t clamp_bound(const EValue& v, int64_t none_value, int64_t size, int64_t lo) {
  int64_t x = v.is_none() ? none_value : v.i;
  if (x < 0) x += size;
  if (x < lo) return lo;
  return x > size ? size : x;
}

}  // namespace

Error fail_dtype(PrepareContext& ctx, const char* what, ScalarType t) {
  return ctx.fail(Error::OperatorMissing, "unsupported dtype %s for %s", scalar_type_name(t), what);
}

Error expect_same_shape(PrepareContext& ctx, const Tensor& a, const Tensor& b, const char* a_name,
                        const char* b_name) {
  if (tensor_same_shape(a, b)) return Error::Ok;
  char sa[160], sb[160];
  format_sizes(a.sizes, a.dim, sa, sizeof(sa));
  format_sizes(b.sizes, b.dim, sb, sizeof(sb));
  return ctx.fail(Error::InvalidProgram, "%s %s%s and %s %s%s must match", a_name,
                  scalar_type_name(a.dtype), sa, b_name, scalar_type_name(b.dtype), sb);
}

Error expect_sizes(PrepareContext& ctx, const Tensor& t, const char* name, const int64_t* sizes,
                   int dim) {
  bool same = t.dim == dim;
  for (int i = 0; same && i < dim; ++i) same = t.sizes[i] == sizes[i];
  if (same) return Error::Ok;
  char want[160], got[160];
  format_sizes(sizes, dim, want, sizeof(want));
  format_sizes(t.sizes, t.dim, got, sizeof(got));
  return ctx.fail(Error::InvalidProgram, "%s must have sizes %s, got %s", name, want, got);
}

Error expect_dtype(PrepareContext& ctx, const Tensor& t, const char* name, ScalarType dtype) {
  if (t.dtype == dtype) return Error::Ok;
  return ctx.fail(Error::InvalidProgram, "%s must be %s, got %s", name, scalar_type_name(dtype),
                  scalar_type_name(t.dtype));
}

Error normalize_dim(PrepareContext& ctx, int64_t d, int rank, const char* name, int* out) {
  int64_t r = rank == 0 ? 1 : rank;  // a 0-d tensor accepts dim 0 and -1
  if (d < -r || d >= r) {
    return ctx.fail(Error::InvalidProgram, "%s %lld out of range for a %d-d tensor", name,
                    (long long)d, rank);
  }
  *out = static_cast<int>(d < 0 ? d + r : d);
  return Error::Ok;
}

Error slice_bounds(PrepareContext& ctx, const EValue& start, const EValue& end, int64_t* step_io,
                   int64_t size, int64_t* first, int64_t* count) {
  const int64_t step = *step_io;
  if (!(start.is_none() || start.is_int()) || !(end.is_none() || end.is_int())) {
    return ctx.fail(Error::InvalidProgram, "start and end must be Int or None, got %s and %s",
                    tag_name(start.tag), tag_name(end.tag));
  }
  if (step <= 0) return ctx.fail(Error::InvalidProgram, "step %lld must be positive", (long long)step);
  *first = clamp_bound(start, 0, size, 0);
  const int64_t len = clamp_bound(end, INT64_MAX, size, *first) - *first;
  *count = len == 0 ? 0 : (len - 1) / step + 1;
  if (*count <= 1) *step_io = 1;
  return Error::Ok;
}

Error read_output_mask(PrepareContext& ctx, const EValue& v, bool mask[3]) {
  if (v.tag != Tag::BoolList) {
    return ctx.fail(Error::InvalidProgram, "output_mask must be a bool list, got %s", tag_name(v.tag));
  }
  if (v.bools.size() != 3) {
    return ctx.fail(Error::InvalidProgram, "output_mask must have 3 entries, got %zu", v.bools.size());
  }
  for (int i = 0; i < 3; ++i) mask[i] = v.bools[i] != 0;
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
