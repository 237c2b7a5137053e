// BundledTest: one self-test stored in a .tern file (Program.self_tests,
// tern.export(..., bundle=[...])): the inputs to run a method on, the outputs
// eager PyTorch gave for them and the tolerance of each, read without the
// file format's generated types.
//
//   for (size_t i = 0; i < program.num_self_tests(); ++i) {
//     tern::BundledTest t = program.self_test(i);
//     // t.method(), t.input(j).info.dtype, t.expected(k).data, t.rtol(k) ...
//   }
//
// Module::self_test() (extension/module.h) runs them and compares; this is
// the plain view for an application that runs them its own way. Program::load
// checked every count, dtype, size and byte count, so the accessors do not
// check again: indices must be below num_inputs() / num_expected().
// A view into the Program's file: valid as long as the Program (and the bytes
// it was loaded from); read-only, share it freely.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/executor/method_meta.h"

namespace tern {
namespace fb {
struct SelfTest;
}  // namespace fb

// A tensor of a bundled test: dtype and sizes, and its numel * element size
// bytes, C-contiguous. The bytes lie inside the file's flatbuffer and are
// not guaranteed aligned for their type (the exporter aligns them to 16):
// copy before reading wider types in place.
struct BundledTensor {
  TensorInfo info;
  Span<const uint8_t> data;
};

class BundledTest {
 public:
  // The method to run, e.g. "forward" (may name no method of the file:
  // Module::self_test() reports NotFound).
  const char* method() const;
  size_t num_inputs() const;
  BundledTensor input(size_t i) const;
  // One per output of the method, in its order.
  size_t num_expected() const;
  BundledTensor expected(size_t i) const;
  // Output i passes when every element has |got - e| <= atol(i) + rtol(i) * |e|.
  double rtol(size_t i) const;
  double atol(size_t i) const;

 private:
  friend class Program;
  explicit BundledTest(const fb::SelfTest* t) : t_(t) {}
  const fb::SelfTest* t_;
};

}  // namespace tern
