// Error codes of the Tern runtime. Errors are values: every failure that a
// file or a caller can cause is returned as one of these (with a log line that
// says what and where), never thrown.
#pragma once

#include <cstdint>

namespace tern {

enum class Error : uint8_t {
  Ok = 0,
  // The caller passed something wrong (bad argument, wrong input shape...).
  InvalidArgument,
  // The file is not a Tern file at all (bad magic).
  NotATernFile,
  // The file is a Tern file of a newer major version than this runtime reads.
  UnsupportedVersion,
  // The file is shorter than its header says.
  Truncated,
  // The file's checksum does not match its contents.
  ChecksumMismatch,
  // The file is malformed: a failed FlatBuffers verification, an index out of
  // range, a size that overflows, a misaligned segment...
  InvalidProgram,
  // Something asked for is not in the file (e.g. a method name).
  NotFound,
  // An operator in the file has no kernel for its argument types.
  OperatorMissing,
  // An allocator ran out of memory.
  OutOfMemory,
  // A memory buffer the caller provided is too small or misaligned.
  MemoryTooSmall,
  // A data-dependent failure while running (e.g. an index out of range).
  ExecutionFailed,
  // A loader could not read the file from its source.
  AccessFailed,
  // A feature the file uses that this runtime does not implement.
  NotSupported,
  // A bundled self-test's output differs from the expected one beyond its
  // tolerance (Module::self_test, tern-run --self-test).
  SelfTestFailed,
};

// A short stable name, e.g. "InvalidProgram".
const char* error_name(Error e);

}  // namespace tern

// Returns from the enclosing function if `expr` (an Error) is not Ok.
#define TERN_CHECK_OK(expr)                      \
  do {                                           \
    ::tern::Error tern_err_ = (expr);            \
    if (tern_err_ != ::tern::Error::Ok) {        \
      return tern_err_;                          \
    }                                            \
  } while (0)
