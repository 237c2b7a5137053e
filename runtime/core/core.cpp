// Small out-of-line pieces of runtime/core: names and the buffer loader.
#include <cstdio>
#include <cstring>

#include "runtime/core/data_loader.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/sizes_text.h"
#include "runtime/core/tensor.h"

namespace tern {

const char* error_name(Error e) {
  switch (e) {
    case Error::Ok: return "Ok";
    case Error::InvalidArgument: return "InvalidArgument";
    case Error::NotATernFile: return "NotATernFile";
    case Error::UnsupportedVersion: return "UnsupportedVersion";
    case Error::Truncated: return "Truncated";
    case Error::ChecksumMismatch: return "ChecksumMismatch";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::NotFound: return "NotFound";
    case Error::OperatorMissing: return "OperatorMissing";
    case Error::OutOfMemory: return "OutOfMemory";
    case Error::MemoryTooSmall: return "MemoryTooSmall";
    case Error::ExecutionFailed: return "ExecutionFailed";
    case Error::AccessFailed: return "AccessFailed";
    case Error::NotSupported: return "NotSupported";
    case Error::SelfTestFailed: return "SelfTestFailed";
  }
  return "Unknown";
}

const char* scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return "float32";
    case ScalarType::Float64: return "float64";
    case ScalarType::Float16: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Int8: return "int8";
    case ScalarType::UInt8: return "uint8";
    case ScalarType::Int16: return "int16";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    case ScalarType::Bool: return "bool";
  }
  return "unknown";
}

const char* tag_name(Tag t) {
  switch (t) {
    case Tag::None: return "None";
    case Tag::Tensor: return "Tensor";
    case Tag::Int: return "Int";
    case Tag::Double: return "Double";
    case Tag::Bool: return "Bool";
    case Tag::String: return "String";
    case Tag::IntList: return "IntList";
    case Tag::DoubleList: return "DoubleList";
    case Tag::BoolList: return "BoolList";
    case Tag::TensorList: return "TensorList";
    case Tag::OptionalTensorList: return "OptionalTensorList";
  }
  return "Unknown";
}

bool tensor_same_shape(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.dim != b.dim) return false;
  for (int i = 0; i < a.dim; ++i) {
    if (a.sizes[i] != b.sizes[i]) return false;
  }
  return true;
}

Result<const uint8_t*> BufferDataLoader::load(size_t offset, size_t size) {
  if (offset > size_ || size > size_ - offset) {
    TERN_LOG_ERROR("BufferDataLoader: range [%zu, +%zu) is outside the %zu-byte buffer", offset,
                   size, size_);
    return Error::InvalidArgument;
  }
  return data_ + offset;
}

const char* sizes_text(const int64_t* sizes, int dim, char* buf, size_t size) {
  size_t used = static_cast<size_t>(snprintf(buf, size, "["));
  for (int d = 0; d < dim && used < size; ++d) {
    used += static_cast<size_t>(snprintf(buf + used, size - used, "%s%lld", d ? ", " : "", (long long)sizes[d]));
  }
  if (used + 2 <= size) {
    snprintf(buf + used, size - used, "]");
  } else if (size >= 5) {
    memcpy(buf + size - 5, "...]", 5);
  }
  return buf;
}

}  // namespace tern
