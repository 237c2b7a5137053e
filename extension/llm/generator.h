// Generator: text in, tokens out, over a language model's .tern file
// (tern.llm.export): the Runner's steps, the file's tokenizer, chat format,
// stop tokens and sampling defaults.
//
//   tern::register_portable_kernels();  tern::register_cpu_backend();
//   tern::llm::Generator g;
//   if (g.load("smollm2.tern", {/*threads=*/2}) != tern::Error::Ok) { ... last_error_message() ... }
//   TERN_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, g.chat_prompt({{"user", "Hi!"}}));
//   TERN_CHECK_OK(g.start(prompt, g.defaults()));       // the prompt's steps (prefill)
//   int32_t id;
//   while (true) {
//     TERN_ASSIGN_OR_RETURN(bool more, g.next(&id));     // one token (decode)
//     if (!more) break;
//     fputs(stream.push(*g.tokenizer().token_bytes(id)).c_str(), stdout);
//   }
//   g.stats().decode_tokens_per_s();
//
// A generation ends at a stop token (the file's: EOS, the chat's end of turn;
// not returned), after max_tokens, or when the context is full. start()
// continues the sequence the previous generation left (a conversation keeps
// its cache); reset() begins a new one.
//
// Memory: load() and start() allocate (the prompt's ids, a sampler per
// generation, which sizes its candidate list on the first token); the steps
// of the following tokens allocate nothing.
//
// Thread safety: none; one Generator per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extension/llm/chat.h"
#include "extension/llm/runner.h"
#include "extension/llm/sampler.h"
#include "extension/llm/tokenizer.h"

namespace tern::llm {

struct GenerateOptions {
  int max_tokens = 128;        // new tokens at most
  SamplerOptions sampling;     // temperature <= 0: greedy
  float repeat_penalty = 1.0f;  // llama.cpp's, over the last repeat_last_n tokens of the sequence
  int repeat_last_n = 64;
  bool stop_at_stop_tokens = true;  // false: only max_tokens and the context end it (benchmarks)
};

struct GenerateStats {
  int prompt_tokens = 0;   // fed by start()
  int generated = 0;       // returned by next()
  double load_ms = 0;      // the last load()
  double prefill_ms = 0;   // start()'s steps
  double decode_ms = 0;    // the steps of the generated tokens (all but the last one's, which is not fed)
  int decode_steps = 0;
  double first_token_ms = 0;  // from start() to the first token next() returned
  std::vector<float> step_ms;  // each decode step, in order

  double prefill_tokens_per_s() const { return prefill_ms > 0 ? prompt_tokens * 1e3 / prefill_ms : 0; }
  double decode_tokens_per_s() const { return decode_ms > 0 ? decode_steps * 1e3 / decode_ms : 0; }
};

class Generator {
 public:
  using Options = Runner::Options;

  // Loads the file, its tokenizer ("tern.llm.tokenizer") and config
  // ("tern.llm.config"), checks they agree with the model (vocabulary size,
  // max_context); InvalidArgument or NotFound naming what is wrong.
  Error load(const char* path, const Options& options);

  const Tokenizer& tokenizer() const { return *tokenizer_; }  // after a successful load()
  const LlmConfig& config() const { return config_; }
  Runner& runner() { return runner_; }
  // The file's sampling and repetition defaults.
  GenerateOptions defaults() const;

  // Token ids of plain text (special tokens' texts become their ids), BOS
  // first when the file's tokenizer adds it and the sequence is empty.
  Result<std::vector<int32_t>> text_prompt(std::string_view text) const;
  // Token ids of a conversation through the file's chat format, with the
  // generation prompt; BOS first as the template has it. NotSupported when
  // the file has no chat format.
  Result<std::vector<int32_t>> chat_prompt(const std::vector<ChatMessage>& messages) const;
  // The ids of the next user turn of a conversation the sequence holds:
  // the assistant suffix first when the last generation ended with a stop
  // token (after_stop; the stop token itself is not in the cache), then the
  // user message and the generation prompt.
  Result<std::vector<int32_t>> chat_turn(std::string_view content, bool after_stop) const;

  // Feeds `prompt` after what the sequence holds and readies the sampler.
  // InvalidArgument (logged) when it would not fit the context.
  Error start(Span<const int32_t> prompt, const GenerateOptions& options);
  // The next token into *id: true, or false when the generation has ended
  // (a stop token, max_tokens, or the context is full; *id is then the
  // stop token or -1).
  Result<bool> next(int32_t* id);
  // A new sequence (the cache's contents are not cleared: never attended).
  void reset();

  const GenerateStats& stats() const { return stats_; }

 private:
  Runner runner_;
  std::optional<Tokenizer> tokenizer_;
  LlmConfig config_;
  GenerateOptions options_;
  std::unique_ptr<Sampler> sampler_;
  std::vector<int32_t> sequence_;  // every id in the cache, in order (for the repetition penalty)
  std::vector<float> logits_;      // a copy when the penalty changes them
  GenerateStats stats_;
  bool pending_ = false;  // logits hold the next token's distribution, not yet sampled
  int32_t unfed_ = -1;    // a token next() returned that the cache does not hold yet
  double started_ = 0;
};

}  // namespace tern::llm
