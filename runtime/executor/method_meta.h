// MethodMeta: what an application can ask of a method of a loaded Program
// without loading the method and without the file format's generated types:
// its inputs and outputs (dtype and sizes), the planned arenas it needs, its
// operators and the backends it hands work to.
//
//   Result<MethodMeta> meta = program.method_meta("forward");
//   if (!meta.ok()) { ... NotFound ... }
//   for (size_t i = 0; i < meta->num_arenas(); ++i) {
//     arenas.push_back(aligned_alloc(64, round_up(*meta->arena_size(i), 64)));
//   }
//   TensorInfo x = *meta->input(0);   // x.dtype, x.sizes, x.nbytes()
//
// A MethodMeta is a view into the Program's verified file: cheap to copy,
// valid as long as the Program (and the bytes it was loaded from).
// Thread safety: read-only; share it freely.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace tern {
namespace fb {
struct Method;
}  // namespace fb

// A tensor's dtype and sizes, as the file declares them (the upper bounds of
// dynamic dims).
struct TensorInfo {
  ScalarType dtype = ScalarType::Float32;
  Span<const int64_t> sizes;  // points into the file

  int dim() const { return static_cast<int>(sizes.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * scalar_type_size(dtype); }
};

// The sizes a dim of an input may take (format 1.3: dynamic shapes).
struct DimRange {
  int64_t min = 0;
  int64_t max = 0;          // the bound memory is planned for
  const char* symbol = "";  // the torch.export.Dim's name; "" for a static dim or one derived from others
  bool dynamic = false;
};

class MethodMeta {
 public:
  const char* name() const;

  size_t num_inputs() const;
  size_t num_outputs() const;
  // InvalidArgument (logged) when i is out of range.
  Result<TensorInfo> input(size_t i) const;
  Result<TensorInfo> output(size_t i) const;
  // Input i's dim d: static (min == max == its size) or dynamic. Sizes in
  // input(i) are the dims' upper bounds. InvalidArgument when out of range.
  Result<DimRange> input_dim_range(size_t i, int d) const;

  // The planned arenas (MemoryManager::planned): how many, and the bytes of
  // each (64-byte aligned buffers of at least that size; at most 2^48,
  // checked at load, so rounding it up does not overflow).
  size_t num_arenas() const;
  Result<uint64_t> arena_size(size_t i) const;

  size_t num_instructions() const;
  // Operators ("aten::convolution" + overload "") the method's kernel calls use.
  size_t num_operators() const;
  const char* operator_name(size_t i) const;      // "" when out of range
  const char* operator_overload(size_t i) const;  // "" for the default overload

  // Subgraphs handed to backends (format 1.1): how many, and the backend
  // name of each ("cpu"); a method without any runs on kernels alone.
  size_t num_delegates() const;
  const char* delegate_backend(size_t i) const;  // "" when out of range

 private:
  friend class Program;
  explicit MethodMeta(const fb::Method* m) : m_(m) {}
  const fb::Method* m_;
};

}  // namespace tern
