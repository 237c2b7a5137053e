// Runner: a language model's .tern file (tern.llm.export) stepped over
// token ids, its KV cache kept in the loaded method.
//
//   tern::register_portable_kernels();  tern::cpu::register_backend();
//   tern::llm::Runner runner;
//   if (runner.load("smollm2.tern", {/*threads=*/2}) != tern::Error::Ok) { ... last_error_message() ... }
//   TERN_CHECK_OK(runner.feed(prompt_ids));      // the prompt, in steps of at most max_step() tokens
//   int32_t next = argmax(runner.logits());       // the last token's logits: [vocab()]
//   TERN_CHECK_OK(runner.feed({&next, 1}));       // one generated token
//   runner.reset();                               // a new sequence
//
// The file's method "forward" takes (tokens int64 [1, T], positions int64
// [T], mask float32 [T, L]) and returns the logits of its last token,
// float32 [1, vocab] (python/tern/llm/decoder.py). The runner keeps the
// position (tokens in the cache) and builds positions and the causal mask:
// token i of a step at position p sits at p + i and attends cache positions
// 0 .. p + i. max_step() (T's bound) and max_context() (L's) come from the
// method's input dims.
//
// feed() allocates nothing: the inputs' buffers are taken at load for the
// largest step. Thread safety: none; one Runner per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "extension/module.h"
#include "runtime/core/span.h"

namespace tern::llm {

class Runner {
 public:
  struct Options {
    int threads = 0;  // 0: physical cores (tern::Module's default)
    Module::LoadMode load_mode = Module::LoadMode::Mmap;
  };

  Runner();
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Loads the file and its "forward" method, checks that the method has
  // the decoder's inputs and output (InvalidArgument naming what differs),
  // and takes the input buffers.
  Error load(const char* path, const Options& options);

  // Appends `ids` to the sequence: runs them through the model in steps of
  // at most max_step() tokens. InvalidArgument (logged) when ids is empty,
  // an id is outside [0, vocab()), or the sequence would grow past
  // max_context(): nothing is run then, and the position stays.
  Error feed(Span<const int32_t> ids);
  // The logits of the last token fed ([vocab()] floats; valid until the
  // next feed() or reset()); empty before the first feed().
  Span<const float> logits() const { return logits_; }
  // A new sequence: position 0 (what the cache holds past the position is
  // never attended: the mask hides it).
  void reset();

  int position() const { return position_; }
  int max_context() const { return max_context_; }
  int max_step() const { return max_step_; }
  int vocab() const { return vocab_; }
  Module& module() { return module_; }

 private:
  Error step(const int32_t* ids, int n);

  Module module_;
  int max_context_ = 0, max_step_ = 0, vocab_ = 0, position_ = 0;
  std::unique_ptr<int64_t[]> tokens_, positions_;
  std::unique_ptr<float[]> mask_;
  Span<const float> logits_;
};

}  // namespace tern::llm
