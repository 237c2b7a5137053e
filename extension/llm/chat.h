// The settings of a language model's .tern file ("tern.llm.config") and
// the chat prompts its format builds.
//
//   TERN_ASSIGN_OR_RETURN(Span<const uint8_t> text, module.metadata("tern.llm.config"));
//   TERN_ASSIGN_OR_RETURN(tern::llm::LlmConfig config, tern::llm::LlmConfig::parse(text));
//   TERN_CHECK_OK(config.check_vocab(tokenizer.vocab_size()));
//   std::vector<tern::llm::ChatMessage> chat = {{"user", "What is the capital of France?"}};
//   TERN_ASSIGN_OR_RETURN(std::string prompt, config.chat.build_prompt({chat.data(), chat.size()}));
//   TERN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.encode(prompt));  // special tokens on
//   if (config.prompt_starts_with_bos()) ids.insert(ids.begin(), config.bos);
//
// The text (python/tern/llm/file_meta.py writes it and documents each key):
// UTF-8, one `key=value` per line, the first '=' splits, in values "\n" is a
// newline and "\\" a backslash (any other backslash is refused). Keys:
// bos, eos, add_bos, stop, temperature, top_k, top_p, repeat_penalty,
// repeat_last_n, max_context, and chat.system_prefix, chat.system_suffix,
// chat.user_prefix, chat.user_suffix, chat.assistant_prefix,
// chat.assistant_suffix, chat.generation_prompt, chat.default_system,
// chat.bos_in_template, chat.trim_content. Keys this version does not know
// are kept (entries()) and otherwise ignored. Everything is checked at parse
// (the text comes from a file): numbers whole and in range, flags 0 or 1,
// max_context present; a refusal logs the line and why.
//
// Thread safety: parse() is a pure function; the results are plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "extension/llm/sampler.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern::llm {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// A chat template reduced to per-role prefixes and suffixes
// (file_meta.chat_format derives it from the model's Jinja template and
// checks it renders conversations as the template does).
struct ChatFormat {
  std::string system_prefix, system_suffix;
  std::string user_prefix, user_suffix;
  std::string assistant_prefix, assistant_suffix;
  std::string generation_prompt;  // after the last message, when the model is to answer
  std::string default_system;     // put first when a conversation does not start with a system message
  bool bos_in_template = false;   // the template starts with the BOS token (not in the built prompt)
  bool trim_content = false;      // contents are stripped of surrounding whitespace (Python's str.strip)

  // The prompt of `messages`: default_system as a system message first when
  // it is not empty and messages[0] is not a system message; each message as
  // its role's prefix + content + suffix; then generation_prompt when asked.
  // Without the BOS token's text (see LlmConfig::prompt_starts_with_bos).
  // InvalidArgument for a role other than system, user, assistant.
  Result<std::string> build_prompt(Span<const ChatMessage> messages, bool add_generation_prompt = true) const;
};

struct LlmConfig {
  int32_t bos = -1;  // -1: none
  int32_t eos = -1;
  bool add_bos = false;
  std::vector<int32_t> stop;  // generation ends at any of these
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float repeat_penalty = 1.0f;  // 1: none
  int32_t repeat_last_n = 64;
  int64_t max_context = 0;
  bool has_chat = false;  // the file has a chat format (chat.* keys)
  ChatFormat chat;
  std::vector<std::pair<std::string, std::string>> entries;  // every key and value, unescaped, in order

  static Result<LlmConfig> parse(Span<const uint8_t> text);

  // InvalidProgram if bos, eos or a stop id is not below vocab_size.
  Error check_vocab(size_t vocab_size) const;

  bool is_stop(int32_t id) const;
  // Whether a runner puts the BOS token before a prompt: add_bos, or a
  // chat prompt of a template that starts with it.
  bool prompt_starts_with_bos(bool chat_prompt = true) const {
    return bos >= 0 && (add_bos || (chat_prompt && has_chat && chat.bos_in_template));
  }
  SamplerOptions sampler_options(uint64_t seed) const;
};

}  // namespace tern::llm
