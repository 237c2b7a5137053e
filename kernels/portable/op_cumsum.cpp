// aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
// args: [self, dim, dtype, out]
//
// out[..., i, ...] = sum of self[..., :i+1, ...] along dim. The out dtype is
// `dtype` when given, else self's, promoted to int64 for an integer or bool
// self (as torch). As torch: self is first converted to the out dtype
// (util/copy.h's rules), then summed in double (floating outs) or int64
// (integer outs, wrapping). Out dtypes: float32, float64, int8, uint8, int16,
// int32, int64 (torch has no bool cumsum); self of those or bool.
//
// run converts (or copies) self into out, then scans out in place: along a
// contiguous dim one running sum per row; otherwise whole rows of `inner`
// columns add into accumulator rows, kSumBlock columns at a time (scratch).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise.h"  // DimSplit
#include "kernels/portable/util/reduce.h"

namespace tern {
namespace portable {
namespace {

// Integer sums wrap: accumulate in uint64, where wrapping is defined.
template <typename T>
using ScanAcc = std::conditional_t<kIsFloat<T>, double, uint64_t>;

using ScanFn = void (*)(void* data, const DimSplit& s, void* scratch);

// In place over data [outer, size, inner].
template <typename T>
void scan(void* data, const DimSplit& s, void* scratch) {
  using Acc = ScanAcc<T>;
  T* x = static_cast<T*>(data);
  if (s.inner == 1) {
    for (int64_t o = 0; o < s.outer; ++o, x += s.size) {
      Acc acc = 0;
      for (int64_t i = 0; i < s.size; ++i) {
        acc += static_cast<Acc>(x[i]);
        x[i] = static_cast<T>(acc);
      }
    }
    return;
  }
  Acc* acc = static_cast<Acc*>(scratch);
  for (int64_t o = 0; o < s.outer; ++o, x += s.size * s.inner) {
    for (int64_t c0 = 0; c0 < s.inner; c0 += kSumBlock) {
      const int64_t n = std::min(s.inner - c0, kSumBlock);
      std::fill(acc, acc + n, Acc(0));
      for (int64_t i = 0; i < s.size; ++i) {
        T* row = x + i * s.inner + c0;
        for (int64_t c = 0; c < n; ++c) {
          acc[c] += static_cast<Acc>(row[c]);
          row[c] = static_cast<T>(acc[c]);
        }
      }
    }
  }
}

ScanFn select_scan(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return scan<float>;
    case ScalarType::Float64: return scan<double>;
    case ScalarType::Float16: return scan<Half>;  // summed in double, each out rounded once
    case ScalarType::BFloat16: return scan<BFloat16>;
    case ScalarType::Int8: return scan<int8_t>;
    case ScalarType::UInt8: return scan<uint8_t>;
    case ScalarType::Int16: return scan<int16_t>;
    case ScalarType::Int32: return scan<int32_t>;
    case ScalarType::Int64: return scan<int64_t>;
    default: return nullptr;
  }
}

struct CumsumState {
  DimSplit split;
  ConvertFn convert;  // nullptr: out has self's dtype, copy
  ScanFn scan;
};
static_assert(sizeof(CumsumState) <= PrepareContext::kStateBytes, "state too large");

Error cumsum_run(RunContext& ctx, EValue* const* args) {
  CumsumState st;
  memcpy(&st, ctx.state(), sizeof(st));
  const Tensor& self = args[0]->tensor;
  Tensor& out = args[3]->tensor;
  if (st.convert != nullptr) {
    st.convert(self.data, out.data, self.numel);
  } else {
    copy_bytes(out.data, self.data, self.nbytes());
  }
  st.scan(out.data, st.split, ctx.scratch());
  return Error::Ok;
}

}  // namespace

Error cumsum_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tag(args, 1, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& self = args[0]->tensor;
  const Tensor& out = args[3]->tensor;
  int dim = 0;
  TERN_CHECK_OK(normalize_dim(ctx, args[1]->i, self.dim, "dim", &dim));
  const ScalarType fallback = scalar_type_is_floating(self.dtype) ? self.dtype : ScalarType::Int64;
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[2], "dtype", fallback, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", self.sizes, self.dim));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", dtype));
  CumsumState st;
  st.split = dim_split(self, dim);
  if (dtype == ScalarType::Bool) return ctx.fail(Error::InvalidProgram, "cumsum has no bool out dtype");
  st.scan = select_scan(dtype);
  if (st.scan == nullptr) return fail_dtype(ctx, "out", dtype);
  st.convert = self.dtype == dtype ? nullptr : select_convert(self.dtype, dtype);
  if (self.dtype != dtype && st.convert == nullptr) return fail_dtype(ctx, "self", self.dtype);
  if (st.split.inner > 1) {
    ctx.request_scratch(static_cast<size_t>(std::min(st.split.inner, kSumBlock)) * 8);
  }
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(cumsum_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
