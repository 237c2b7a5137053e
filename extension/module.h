// Module: the easy way to run a .tern file from C++.
//
//   #include "extension/module.h"
//   #include "kernels/portable/register.h"
//
//   tern::register_portable_kernels();   // once: the application picks its kernels
//   tern::Module module;
//   if (module.load("model.tern") != tern::Error::Ok) {   // threads: physical cores
//     fprintf(stderr, "%s\n", tern::last_error_message());
//     return 1;
//   }
//   std::vector<float> x(1 * 3 * 224 * 224);
//   tern::Tensor input = tern::make_tensor(x.data(), tern::ScalarType::Float32, {1, 3, 224, 224});
//   auto outputs = module.forward({&input, 1});
//   if (!outputs.ok()) { ... }
//   const tern::Tensor& logits = (*outputs)[0];   // valid until the next run
//
// A Module owns what the runtime core leaves to the application: the file
// (memory-mapped by default), the method allocator (from the heap) and the
// planned arenas (mapped from the OS and made resident: page_memory.h),
// all taken at load(), so that the first run takes no page faults in them.
// forward() and run() then allocate nothing: they copy the inputs into
// planned memory and execute.
// Out of memory: every heap allocation is the non-throwing kind (this code
// is built without exceptions, which a std::bad_alloc would unwind through
// without running its destructors). A failed one makes load() or method()
// return OutOfMemory, logged with its size; a load() that fails leaves the
// Module empty (no program, no method), a method() that fails loads nothing. It does not
// register kernels: the application registers the kernel libraries it links
// (runtime/kernel/registry.h) before load().
// A model with state (format 1.2: buffers its forward mutates) keeps it in
// each loaded method between run() calls; method()->reset_state() restores
// the values it had at export.
// Thread safety: none; use one Module per thread.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>

#include "extension/data_loaders.h"
#include "extension/self_test.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"

namespace tern {

// A Tensor over memory the caller owns.
Tensor make_tensor(void* data, ScalarType dtype, std::initializer_list<int64_t> sizes);
Tensor make_tensor(void* data, ScalarType dtype, const int64_t* sizes, int dim);

class Module {
 public:
  enum class LoadMode { Mmap, File };
  struct Options {
    LoadMode load_mode;
    // Threads each method's kernels use; 0 = physical_core_count().
    int threads;
    // MethodOptions::max_loop_instructions of each method.
    uint64_t max_loop_instructions = MethodOptions{}.max_loop_instructions;
  };

  Module();
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Loads and verifies the file, then loads its "forward" method (if any).
  // On failure, last_error_message() says what and where, and the Module is
  // empty (program() must not be called until a load() succeeds).
  Error load(const char* path, LoadMode mode = LoadMode::Mmap) { return load(path, Options{mode, 0}); }
  Error load(const char* path, const Options& options);
  // The same from `size` bytes at `data` (64-byte aligned; the caller keeps
  // them alive and unchanged while this Module uses them).
  Error load_buffer(const void* data, size_t size, const Options& options);

  const Program& program() const { return *program_; }

  // Named byte strings stored in the file beside the model
  // (tern.export(..., metadata={...}); Program::metadata): a vocabulary, a
  // tokenizer, settings. Views into the loaded file, valid until the next
  // load() or the Module's end; no copy, no allocation.
  //
  //   tern::Result<tern::Span<const uint8_t>> vocab = module.metadata("langid.vocab");
  //   if (!vocab.ok()) { fprintf(stderr, "%s\n", tern::last_error_message()); ... }
  //
  // NotFound (logged with the key) if the file has no such key or no program
  // is loaded. Keys in bytewise order: metadata_key(i) for i < num_metadata().
  Result<Span<const uint8_t>> metadata(const char* key) const;
  size_t num_metadata() const { return program_ ? program_->num_metadata() : 0; }
  const char* metadata_key(size_t i) const { return program_->metadata_key(i); }

  // The method `name`, loading it on first use (heap allocation happens here,
  // once). nullptr (with a log line) if it does not exist or fails to load
  // (a later call tries again).
  Method* method(const char* name = "forward");

  // Sets the inputs (dtype and sizes must match), executes, and returns the
  // outputs. The returned tensors point into planned memory.
  Result<Span<const Tensor>> run(const char* name, Span<const Tensor> inputs);
  Result<Span<const Tensor>> forward(Span<const Tensor> inputs) { return run("forward", inputs); }

  // Runs the file's bundled self-tests (tern.export(..., bundle=[...]);
  // extension/self_test.h has the rule) on this device: for each test, its
  // method's state is reset (reset_state()), the inputs set, the method run
  // and every output compared with its expected value; then the state is
  // reset again, so state the application built up is lost. `report` (if
  // any) gets one SelfTestRecord per expected output, pass or fail.
  // Returns Ok when every output passed; SelfTestFailed when an output
  // differs beyond its tolerance; a test's own error when it could not run
  // (NotFound: the method it names is not in the file; InvalidArgument:
  // inputs or outputs that do not fit the method; ExecutionFailed ...);
  // NotFound when the file bundles no tests. On failure one log line names
  // the first failed output with its error, worst element and tolerance.
  // Loads the methods the tests name (as method() does); otherwise
  // allocates nothing.
  Error self_test(SelfTestReport report = nullptr, void* context = nullptr);

 private:
  struct LoadedMethod;
  LoadedMethod* find(const char* name);
  // load()'s steps once loader_ is set: verify the program, load "forward".
  Error load_program(const Options& options);
  // method(), with the reason it failed: NotFound, OutOfMemory or Method::load's error.
  Error load_method(const char* name, Method** out);
  // Drops the methods, the program and the file, in that order.
  void unload();

  MethodOptions method_options_;
  std::unique_ptr<DataLoader> loader_;
  std::optional<Program> program_;
  LoadedMethod* methods_ = nullptr;  // a list, owned, the latest loaded first
};

}  // namespace tern
