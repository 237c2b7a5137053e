// Program: a verified, immutable .tern file.
//
//   tern::MmapDataLoader loader;                     // extension/
//   TERN_CHECK_OK(loader.open("model.tern"));
//   tern::Result<tern::Program> program = tern::Program::load(loader);
//   if (!program.ok()) { ... tern::last_error_message() says what and where ... }
//
// load() checks everything in the file once (header, checksum, FlatBuffers
// verification, then every index, offset, size and count of every method) so
// that Method::load and execute() can trust it. A Program owns no memory: it
// points into the bytes its DataLoader returned, which must outlive it.
// Thread safety: immutable after load; share it between threads, each with its
// own Method.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/data_loader.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/executor/bundled_test.h"
#include "runtime/executor/method_meta.h"
#include "runtime/format/header.h"

namespace tern {
namespace fb {
struct Program;
struct Method;
}  // namespace fb

class Program {
 public:
  static Result<Program> load(DataLoader& loader);

  size_t num_methods() const;
  // The name of method i (i < num_methods()).
  const char* method_name(size_t i) const;
  // What method `name` takes, returns and needs, without loading it.
  // NotFound (logged) if there is no such method.
  Result<MethodMeta> method_meta(const char* name) const;

  // The method called `name`, or nullptr (for the executor; the generated
  // type is not part of the public API).
  const fb::Method* method(const char* name) const;

  const Header& header() const { return header_; }
  // Bytes of data segment i (checked at load: i < num_segments()).
  const uint8_t* segment_data(size_t i) const;
  uint64_t segment_size(size_t i) const;
  size_t num_segments() const { return static_cast<size_t>(header_.segment_count); }
  // "tern 0.1.0 / torch 2.14.1", or "".
  const char* producer() const;

  // Metadata: named byte strings stored beside the model (a vocabulary, a
  // tokenizer, settings: tern.export(..., metadata={...})). The runtime never
  // interprets them; load() checked the keys (1 to 256 bytes, no NUL, sorted,
  // unique) and that every value lies inside the file.
  //
  //   Result<Span<const uint8_t>> vocab = program.metadata("langid.vocab");
  //   if (!vocab.ok()) { ... last_error_message() names the key ... }
  //
  // Values are views into the loaded file, valid while the Program is: no
  // copy, no allocation. Their alignment is not guaranteed (the exporter
  // writes them 16-byte aligned): copy before reading wider types in place.
  size_t num_metadata() const;
  // Key i (i < num_metadata()), in bytewise order; NUL-terminated.
  const char* metadata_key(size_t i) const;
  // The bytes of entry i (i < num_metadata()).
  Span<const uint8_t> metadata_value(size_t i) const;
  // The bytes stored under `key` (binary search over the sorted keys), or
  // NotFound, logged with the key.
  Result<Span<const uint8_t>> metadata(const char* key) const;

  // Bundled self-tests (tern.export(..., bundle=[...])): test inputs with
  // the outputs eager PyTorch gave and their tolerances, checked at load
  // (runtime/format/verify.h: verify_self_tests). Module::self_test() runs
  // them; 0 for a file without any.
  size_t num_self_tests() const;
  // Test i (i < num_self_tests()): a view into the file.
  BundledTest self_test(size_t i) const;

 private:
  Program(const uint8_t* data, const Header& header, const fb::Program* root)
      : data_(data), header_(header), root_(root) {}

  const uint8_t* data_;
  Header header_;
  const fb::Program* root_;
};

}  // namespace tern
