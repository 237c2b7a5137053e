// Element types. The numbering is the file format's (schema/tern.fbs).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

enum class ScalarType : int8_t {
  Float32 = 0,
  Float64 = 1,
  Float16 = 2,
  BFloat16 = 3,
  Int8 = 4,
  UInt8 = 5,
  Int16 = 6,
  Int32 = 7,
  Int64 = 8,
  Bool = 9,
};

constexpr int kNumScalarTypes = 10;

inline bool scalar_type_valid(int v) { return v >= 0 && v < kNumScalarTypes; }

// Bytes of one element.
inline size_t scalar_type_size(ScalarType t) {
  switch (t) {
    case ScalarType::Float64:
    case ScalarType::Int64:
      return 8;
    case ScalarType::Float32:
    case ScalarType::Int32:
      return 4;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
    case ScalarType::Int16:
      return 2;
    case ScalarType::Int8:
    case ScalarType::UInt8:
    case ScalarType::Bool:
      return 1;
  }
  return 0;
}

inline bool scalar_type_is_floating(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 ||
         t == ScalarType::Float16 || t == ScalarType::BFloat16;
}

// "float32", "int64", ...
const char* scalar_type_name(ScalarType t);

// Maps a C++ element type to its ScalarType (for kernels and tests).
template <typename T>
struct ScalarTypeOf;
template <> struct ScalarTypeOf<float> { static constexpr ScalarType value = ScalarType::Float32; };
template <> struct ScalarTypeOf<double> { static constexpr ScalarType value = ScalarType::Float64; };
template <> struct ScalarTypeOf<int8_t> { static constexpr ScalarType value = ScalarType::Int8; };
template <> struct ScalarTypeOf<uint8_t> { static constexpr ScalarType value = ScalarType::UInt8; };
template <> struct ScalarTypeOf<int16_t> { static constexpr ScalarType value = ScalarType::Int16; };
template <> struct ScalarTypeOf<int32_t> { static constexpr ScalarType value = ScalarType::Int32; };
template <> struct ScalarTypeOf<int64_t> { static constexpr ScalarType value = ScalarType::Int64; };
template <> struct ScalarTypeOf<bool> { static constexpr ScalarType value = ScalarType::Bool; };

}  // namespace tern
