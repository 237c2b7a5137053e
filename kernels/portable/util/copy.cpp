#include "kernels/portable/util/copy.h"

#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half.h"

namespace tern {
namespace portable {
namespace {

// Element-sized integers that may alias any dtype's storage (the copy loops
// move floats and ints through them).
typedef uint8_t __attribute__((may_alias)) Bits8;
typedef uint16_t __attribute__((may_alias)) Bits16;
typedef uint32_t __attribute__((may_alias)) Bits32;
typedef uint64_t __attribute__((may_alias)) Bits64;

// Drops size-1 dims and merges a dim into the one before it when the source
// walks them as one (stride[k-1] == stride[k] * size[k]); the destination is
// contiguous, so it never prevents a merge. Returns false if a size is 0.
bool coalesce(const StridedView& in, StridedView* out) {
  out->dim = 0;
  for (int k = 0; k < in.dim; ++k) {
    if (in.sizes[k] == 0) return false;
    if (in.sizes[k] == 1) continue;
    int n = out->dim;
    if (n > 0 && out->strides[n - 1] == in.strides[k] * in.sizes[k]) {
      out->sizes[n - 1] *= in.sizes[k];
      out->strides[n - 1] = in.strides[k];
    } else {
      out->sizes[n] = in.sizes[k];
      out->strides[n] = in.strides[k];
      out->dim = n + 1;
    }
  }
  if (out->dim == 0) {  // a single element
    out->dim = 1;
    out->sizes[0] = 1;
    out->strides[0] = 1;
  }
  return true;
}

// Innermost dim of the source is contiguous (memcpy), broadcast (fill) or
// strided (gather). The destination advances by one row per outer index.
template <typename T>
void copy_rows(T* dst, const T* src, const StridedView& v) {
  const int last = v.dim - 1;
  const int64_t n = v.sizes[last];
  const int64_t stride = v.strides[last];
  Odometer outer;
  for (int k = 0; k < last; ++k) outer.add(v.sizes[k], v.strides[k]);
  const int64_t rows = outer.count();
  for (int64_t r = 0; r < rows; ++r, outer.next(), dst += n) {
    const T* s = src + outer.offset;
    if (stride == 1) {
      memmove(dst, s, static_cast<size_t>(n) * sizeof(T));
    } else if (stride == 0) {
      const T value = *s;
      for (int64_t i = 0; i < n; ++i) dst[i] = value;
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = s[i * stride];
    }
  }
}

// dst[a * dst_stride_a + b] = src[a + b * src_stride_b], in square tiles so
// both the strided reads and the strided writes stay in cache.
template <typename T>
void transpose_2d(T* dst, const T* src, int64_t size_a, int64_t dst_stride_a, int64_t size_b,
                  int64_t src_stride_b) {
  constexpr int64_t kTile = 32;
  for (int64_t a0 = 0; a0 < size_a; a0 += kTile) {
    const int64_t a1 = a0 + kTile < size_a ? a0 + kTile : size_a;
    for (int64_t b0 = 0; b0 < size_b; b0 += kTile) {
      const int64_t b1 = b0 + kTile < size_b ? b0 + kTile : size_b;
      for (int64_t a = a0; a < a1; ++a) {
        T* d = dst + a * dst_stride_a;
        const T* s = src + a;
        for (int64_t b = b0; b < b1; ++b) d[b] = s[b * src_stride_b];
      }
    }
  }
}

// The source's contiguous dim is `a` (not the innermost): transpose the
// [a, last] plane for every index of the other dims.
template <typename T>
void copy_transposed(T* dst, const T* src, const StridedView& v, int a) {
  const int last = v.dim - 1;
  int64_t dst_strides[kMaxDims];
  int64_t s = 1;
  for (int k = last; k >= 0; --k) {
    dst_strides[k] = s;
    s *= v.sizes[k];
  }
  Odometer src_outer, dst_outer;
  for (int k = 0; k < last; ++k) {
    if (k == a) continue;
    src_outer.add(v.sizes[k], v.strides[k]);
    dst_outer.add(v.sizes[k], dst_strides[k]);
  }
  const int64_t planes = src_outer.count();
  for (int64_t p = 0; p < planes; ++p, src_outer.next(), dst_outer.next()) {
    transpose_2d(dst + dst_outer.offset, src + src_outer.offset, v.sizes[a], dst_strides[a],
                 v.sizes[last], v.strides[last]);
  }
}

template <typename T>
void copy_strided_t(void* dst, const void* src, const StridedView& v) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  const int last = v.dim - 1;
  if (v.strides[last] > 1) {
    for (int k = 0; k < last; ++k) {
      if (v.strides[k] == 1) return copy_transposed(d, s, v, k);
    }
  }
  copy_rows(d, s, v);
}

// --- dtype conversion ---

template <typename To, typename From>
To convert_one(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                       sizeof(To) <= 2) {
    // As torch: through int64, then wrap, so -1.0 -> uint8 is 255 and
    // 40000.0 -> int16 is -25536.
    return static_cast<To>(convert_one<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range float -> int is undefined in C++; saturate instead.
    if (!(v == v)) return 0;
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Bool storage is read as bytes: a byte other than 0/1 is not a valid C++ bool.
template <typename From>
struct Load {
  using Storage = From;
  static From get(Storage v) { return v; }
};
template <>
struct Load<bool> {
  using Storage = uint8_t;
  static bool get(uint8_t v) { return v != 0; }
};
// float16 / bfloat16 are read as their exact float32 value; a conversion to
// them rounds once from float32 (or float64 through float32, as c10 does).
template <>
struct Load<Half> {
  using Storage = Half;
  static float get(Half v) { return v; }
};
template <>
struct Load<BFloat16> {
  using Storage = BFloat16;
  static float get(BFloat16 v) { return v; }
};

template <typename From, typename To>
void convert(const void* src, void* dst, int64_t n) {
  const auto* s = static_cast<const typename Load<From>::Storage*>(src);
  To* d = static_cast<To*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = convert_one<To>(Load<From>::get(s[i]));
}

template <typename From>
ConvertFn select_convert_to(ScalarType to) {
  switch (to) {
    case ScalarType::Float32: return convert<From, float>;
    case ScalarType::Float64: return convert<From, double>;
    case ScalarType::Float16: return convert<From, Half>;
    case ScalarType::BFloat16: return convert<From, BFloat16>;
    case ScalarType::Int8: return convert<From, int8_t>;
    case ScalarType::UInt8: return convert<From, uint8_t>;
    case ScalarType::Int16: return convert<From, int16_t>;
    case ScalarType::Int32: return convert<From, int32_t>;
    case ScalarType::Int64: return convert<From, int64_t>;
    case ScalarType::Bool: return convert<From, bool>;
    default: return nullptr;
  }
}

}  // namespace

void copy_strided(void* dst, const void* src, size_t elem_size, const StridedView& view) {
  StridedView v;
  if (!coalesce(view, &v)) return;
  switch (elem_size) {
    case 1: return copy_strided_t<Bits8>(dst, src, v);
    case 2: return copy_strided_t<Bits16>(dst, src, v);
    case 4: return copy_strided_t<Bits32>(dst, src, v);
    case 8: return copy_strided_t<Bits64>(dst, src, v);
    default: break;
  }
}

void copy_bytes(void* dst, const void* src, size_t n) {
  if (dst != src && n > 0) memmove(dst, src, n);
}

ConvertFn select_convert(ScalarType from, ScalarType to) {
  switch (from) {
    case ScalarType::Float32: return select_convert_to<float>(to);
    case ScalarType::Float64: return select_convert_to<double>(to);
    case ScalarType::Float16: return select_convert_to<Half>(to);
    case ScalarType::BFloat16: return select_convert_to<BFloat16>(to);
    case ScalarType::Int8: return select_convert_to<int8_t>(to);
    case ScalarType::UInt8: return select_convert_to<uint8_t>(to);
    case ScalarType::Int16: return select_convert_to<int16_t>(to);
    case ScalarType::Int32: return select_convert_to<int32_t>(to);
    case ScalarType::Int64: return select_convert_to<int64_t>(to);
    case ScalarType::Bool: return select_convert_to<bool>(to);
    default: return nullptr;
  }
}

namespace {

// gather_slices for slices of exactly N bytes: each read whole into a local,
// then written (so a dst that overlaps src, which only a hostile plan makes,
// stays defined, as with memmove), as a few loads and stores instead of a
// memmove call per slice. Embeddings of short rows gather little else
// (the langid model's rows of 8 one-byte codes, its 2-float centroids).
template <size_t N>
int64_t gather_fixed(uint8_t* d, const uint8_t* s, int64_t outer, int64_t n, const Tensor& index, bool wrap) {
  for (int64_t o = 0; o < outer; ++o, s += n * static_cast<int64_t>(N)) {
    for (int64_t i = 0; i < index.numel; ++i, d += N) {
      int64_t k = index_at(index, i);  // checked right before use, as below
      if (wrap && k < 0) k += n;
      if (k < 0 || k >= n) return i;
      uint8_t v[N];
      memcpy(v, s + k * static_cast<int64_t>(N), N);
      memcpy(d, v, N);
    }
  }
  return -1;
}

}  // namespace

int64_t gather_slices(void* dst, const void* src, size_t elem_size, int64_t outer, int64_t n,
                      int64_t inner, const Tensor& index, bool wrap) {
  const size_t slice = static_cast<size_t>(inner) * elem_size;
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  switch (slice) {
    case 1: return gather_fixed<1>(d, s, outer, n, index, wrap);
    case 2: return gather_fixed<2>(d, s, outer, n, index, wrap);
    case 4: return gather_fixed<4>(d, s, outer, n, index, wrap);
    case 8: return gather_fixed<8>(d, s, outer, n, index, wrap);
    case 16: return gather_fixed<16>(d, s, outer, n, index, wrap);
    case 32: return gather_fixed<32>(d, s, outer, n, index, wrap);
    case 64: return gather_fixed<64>(d, s, outer, n, index, wrap);
    default: break;
  }
  for (int64_t o = 0; o < outer; ++o, s += n * slice) {
    for (int64_t i = 0; i < index.numel; ++i, d += slice) {
      // Checked right before use, every time: even an index that shares
      // memory with dst (a hostile plan) cannot make a read go out of bounds.
      int64_t k = index_at(index, i);
      if (wrap && k < 0) k += n;
      if (k < 0 || k >= n) return i;
      memmove(d, s + k * slice, slice);
    }
  }
  return -1;
}

void scatter_slices(void* dst, size_t dst_elem, const void* src, size_t src_elem, ConvertFn convert,
                    int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t step,
                    int64_t count) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t dst_slice = static_cast<size_t>(inner) * dst_elem;
  const size_t src_slice = static_cast<size_t>(inner) * src_elem;
  for (int64_t o = 0; o < outer; ++o, d += n * dst_slice) {
    for (int64_t i = 0; i < count; ++i, s += src_slice) convert(s, d + (start + i * step) * dst_slice, inner);
  }
}

void broadcast_strides(const Tensor& t, int rank, int64_t* strides) {
  const int lead = rank - t.dim;
  for (int k = 0; k < rank; ++k) {
    const int j = k - lead;
    strides[k] = (j < 0 || t.sizes[j] == 1) ? 0 : t.stride(j);
  }
}

Error expect_slice_scatter(PrepareContext& ctx, Span<EValue* const> args, size_t i_out,
                           const int64_t* src_sizes, int src_dim, SliceScatterState* st) {
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  TERN_CHECK_OK(ctx.expect_tensor(args, i_out));
  const Tensor& self = args[0]->tensor;
  const Tensor& src = args[1]->tensor;
  TERN_CHECK_OK(expect_sizes(ctx, src, "src", src_sizes, src_dim));
  TERN_CHECK_OK(expect_same_shape(ctx, args[i_out]->tensor, self, "out", "self"));
  st->convert = select_convert(src.dtype, self.dtype);
  if (st->convert == nullptr) {
    return ctx.fail(Error::OperatorMissing, "unsupported conversion of src %s to self %s",
                    scalar_type_name(src.dtype), scalar_type_name(self.dtype));
  }
  return Error::Ok;
}

Error parse_optional_dtype(PrepareContext& ctx, const EValue& v, const char* name,
                           ScalarType fallback, ScalarType* out) {
  if (v.is_none()) {
    *out = fallback;
    return Error::Ok;
  }
  if (!v.is_int()) {
    return ctx.fail(Error::InvalidProgram, "%s must be Int or None, got %s", name, tag_name(v.tag));
  }
  if (v.i < 0 || v.i >= kNumScalarTypes) {
    return ctx.fail(Error::InvalidProgram, "%s %lld is not a scalar type", name, (long long)v.i);
  }
  *out = static_cast<ScalarType>(v.i);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
