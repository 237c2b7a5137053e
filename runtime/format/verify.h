// Semantic verification of an untrusted program, after the FlatBuffers
// verifier has checked its structure: every index, offset, size and count is
// range-checked and every size is computed with overflow checks, so that the
// executor can use them without checking again.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"

namespace tern {
namespace fb {
struct Method;
struct Program;
struct Tensor;
}  // namespace fb

struct SegmentInfo {
  uint64_t offset;  // from the start of the file
  uint64_t size;
};

// Checks one method against the file's segments. Logs the first problem with
// the method name and value or instruction index.
Error verify_method(const fb::Method& method, const SegmentInfo* segments, uint64_t num_segments);

// Program.metadata: the most entries, and the longest key, a file may have.
constexpr uint32_t kMaxMetadataEntries = 1024;
constexpr uint32_t kMaxMetadataKey = 256;

// Checks Program.metadata: every entry has a key of 1 to kMaxMetadataKey bytes
// without NUL and a value, the keys are in strictly increasing bytewise order
// (so each is unique and lookups can bisect), at most kMaxMetadataEntries.
Error verify_metadata(const fb::Program& program);

// Program.self_tests: the most tests a file may bundle, and the most tensors
// in one test's inputs or expected outputs.
constexpr uint32_t kMaxSelfTests = 64;
constexpr uint32_t kMaxSelfTestTensors = 1024;

// Checks Program.self_tests (runtime/format/verify_self_tests.cpp): at most
// kMaxSelfTests, each with a method name, at most kMaxSelfTestTensors inputs
// and expected outputs, every tensor of a known dtype, at most kMaxDims
// sizes each >= 0, and exactly numel * element size bytes of data; one rtol
// and one atol per expected output, each finite and >= 0. Whether the method
// exists and takes these inputs is Module::self_test()'s to report.
Error verify_self_tests(const fb::Program& program);

// The order of metadata keys: bytewise (memcmp), a key before its extensions.
int compare_metadata_keys(const char* a, size_t na, const char* b, size_t nb);

// The symbol that size expression `e` is exactly (code "push symbol k"),
// or -1 (also for an `e` out of range).
int64_t size_expr_is_symbol(const fb::Method& method, int32_t e);

// Logs "invalid program: <message>" (e.g. "method 'forward' value 12: ...")
// and returns Error::InvalidProgram: the verifiers' one way to fail.
__attribute__((format(printf, 1, 2))) Error invalid_program(const char* fmt, ...);

// Verifies a method's dynamic shapes (format 1.3); set by
// tern::enable_dynamic_shapes() (runtime/executor/method_shapes.cpp). While
// nullptr, verify_method refuses files with dynamic shapes (NotSupported).
extern Error (*verify_dynamic_shapes)(const fb::Method& method);

// Fills dtype, dim, sizes and numel of `out` from a verified fb::Tensor (no
// data pointer).
void tensor_shape_from_fb(const fb::Tensor& t, Tensor* out);

}  // namespace tern
