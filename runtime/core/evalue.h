// EValue: one value of a method: a tensor, a scalar, a list, a string or None.
// Values are created once at Method::load from the file; kernels read their
// arguments and write their out tensors through them.
//
// Lists point at memory that lives as long as the Method (the file's
// flatbuffer or the method allocator).
#pragma once

#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/tensor.h"

namespace tern {

enum class Tag : uint8_t {
  None,
  Tensor,
  Int,
  Double,
  Bool,
  String,
  IntList,
  DoubleList,
  BoolList,
  TensorList,
  OptionalTensorList,  // items may be nullptr (None)
};

const char* tag_name(Tag t);

struct EValue {
  Tag tag = Tag::None;
  union {
    Tensor tensor;
    int64_t i;
    double d;
    bool b;
    const char* str;
    Span<const int64_t> ints;
    Span<const double> doubles;
    Span<const uint8_t> bools;
    Span<Tensor* const> tensors;  // TensorList / OptionalTensorList
  };

  EValue() : i(0) {}

  bool is_none() const { return tag == Tag::None; }
  bool is_tensor() const { return tag == Tag::Tensor; }
  bool is_int() const { return tag == Tag::Int; }
  bool is_double() const { return tag == Tag::Double; }
  bool is_bool() const { return tag == Tag::Bool; }
  // An ATen Scalar argument: an Int, a Double or a Bool.
  bool is_scalar() const { return tag == Tag::Int || tag == Tag::Double || tag == Tag::Bool; }
  double to_double() const {
    return tag == Tag::Double ? d : tag == Tag::Int ? static_cast<double>(i) : (b ? 1.0 : 0.0);
  }
};

}  // namespace tern
