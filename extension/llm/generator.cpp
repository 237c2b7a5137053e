#include "extension/llm/generator.h"

#include <chrono>
#include <new>
#include <utility>

#include "runtime/core/log.h"

namespace tern::llm {

namespace {

constexpr const char* kTokenizerKey = "tern.llm.tokenizer";
constexpr const char* kConfigKey = "tern.llm.config";

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Error Generator::load(const char* path, const Options& options) {
  const double t0 = now_ms();
  tokenizer_.reset();
  sampler_.reset();
  sequence_.clear();
  pending_ = false;
  unfed_ = -1;
  stats_ = {};
  TERN_CHECK_OK(runner_.load(path, options));
  Module& module = runner_.module();
  Result<Span<const uint8_t>> blob = module.metadata(kTokenizerKey);
  Result<Span<const uint8_t>> text = module.metadata(kConfigKey);
  if (!blob.ok() || !text.ok()) {
    TERN_LOG_ERROR("%s: no %s metadata; a language model's file is written by tern.llm.export", path,
                   blob.ok() ? kConfigKey : kTokenizerKey);
    return Error::NotFound;
  }
  Result<Tokenizer> tokenizer = Tokenizer::load(*blob);
  if (!tokenizer.ok()) return tokenizer.error();
  Result<LlmConfig> config = LlmConfig::parse(*text);
  if (!config.ok()) return config.error();
  if (tokenizer->vocab_size() > static_cast<size_t>(runner_.vocab())) {
    TERN_LOG_ERROR("%s: the tokenizer has %zu tokens, the model's logits %d", path, tokenizer->vocab_size(),
                   runner_.vocab());
    return Error::InvalidArgument;
  }
  TERN_CHECK_OK(config->check_vocab(tokenizer->vocab_size()));
  tokenizer_.emplace(std::move(*tokenizer));
  config_ = std::move(*config);
  if (config_.max_context != runner_.max_context()) {
    TERN_LOG_ERROR("%s: tern.llm.config says max_context %lld, the method's mask holds %d positions", path,
                   static_cast<long long>(config_.max_context), runner_.max_context());
    return Error::InvalidArgument;
  }
  stats_.load_ms = now_ms() - t0;
  return Error::Ok;
}

GenerateOptions Generator::defaults() const {
  GenerateOptions o;
  o.sampling = config_.sampler_options(0);
  o.repeat_penalty = config_.repeat_penalty;
  o.repeat_last_n = config_.repeat_last_n;
  return o;
}

Result<std::vector<int32_t>> Generator::text_prompt(std::string_view text) const {
  TERN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_->encode(text));
  if (runner_.position() == 0 && config_.prompt_starts_with_bos(false)) ids.insert(ids.begin(), config_.bos);
  return ids;
}

Result<std::vector<int32_t>> Generator::chat_prompt(const std::vector<ChatMessage>& messages) const {
  if (!config_.has_chat) {
    TERN_LOG_ERROR("the model's file has no chat format (its GGUF had no chat template a runner can follow)");
    return Error::NotSupported;
  }
  TERN_ASSIGN_OR_RETURN(std::string text, config_.chat.build_prompt({messages.data(), messages.size()}));
  TERN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_->encode(text));
  if (runner_.position() == 0 && config_.prompt_starts_with_bos(true)) ids.insert(ids.begin(), config_.bos);
  return ids;
}

Result<std::vector<int32_t>> Generator::chat_turn(std::string_view content, bool after_stop) const {
  if (!config_.has_chat) {
    TERN_LOG_ERROR("the model's file has no chat format (its GGUF had no chat template a runner can follow)");
    return Error::NotSupported;
  }
  const ChatFormat& f = config_.chat;
  std::string text = after_stop ? f.assistant_suffix : std::string();
  if (f.trim_content) {
    const char* ws = " \t\n\r\f\v";
    const size_t a = content.find_first_not_of(ws);
    content = a == std::string_view::npos ? std::string_view() : content.substr(a, content.find_last_not_of(ws) - a + 1);
  }
  text.append(f.user_prefix).append(content).append(f.user_suffix).append(f.generation_prompt);
  return tokenizer_->encode(text);
}

void Generator::reset() {
  runner_.reset();
  sequence_.clear();
  pending_ = false;
  unfed_ = -1;
}

Error Generator::start(Span<const int32_t> prompt, const GenerateOptions& options) {
  if (!tokenizer_) {
    TERN_LOG_ERROR("llm generator: start() before a successful load()");
    return Error::InvalidArgument;
  }
  options_ = options;
  pending_ = false;
  // The last token of the previous generation, if it was returned but not
  // fed, goes first: the cache then holds the whole conversation.
  std::vector<int32_t> ids;
  if (unfed_ >= 0) ids.push_back(unfed_);
  ids.insert(ids.end(), prompt.begin(), prompt.end());
  const double t0 = now_ms();
  TERN_CHECK_OK(runner_.feed({ids.data(), ids.size()}));
  const double t1 = now_ms();
  unfed_ = -1;
  sequence_.insert(sequence_.end(), ids.begin(), ids.end());
  sampler_.reset(new (std::nothrow) Sampler(options.sampling));
  if (!sampler_) return Error::OutOfMemory;
  const int prompt_tokens = static_cast<int>(ids.size());
  const double load_ms = stats_.load_ms;
  stats_ = {};
  stats_.load_ms = load_ms;
  stats_.prompt_tokens = prompt_tokens;
  stats_.prefill_ms = t1 - t0;
  // next() allocates nothing: at most one decode step per position left
  const int steps = runner_.max_context() - runner_.position();
  stats_.step_ms.reserve(static_cast<size_t>(options.max_tokens < steps ? options.max_tokens : steps));
  started_ = t0;
  pending_ = true;
  return Error::Ok;
}

Result<bool> Generator::next(int32_t* id) {
  *id = -1;
  if (!pending_) return false;
  if (stats_.generated >= options_.max_tokens) {
    pending_ = false;
    return false;
  }
  Span<const float> logits = runner_.logits();
  if (options_.repeat_penalty != 1.0f && !sequence_.empty()) {
    logits_.assign(logits.begin(), logits.end());
    const size_t n = sequence_.size() < static_cast<size_t>(options_.repeat_last_n) ? sequence_.size()
                                                                                     : static_cast<size_t>(options_.repeat_last_n);
    apply_repeat_penalty({logits_.data(), logits_.size()}, {sequence_.data() + sequence_.size() - n, n},
                         options_.repeat_penalty);
    logits = {logits_.data(), logits_.size()};
  }
  const int32_t token = sampler_->sample(logits);
  *id = token;
  if (options_.stop_at_stop_tokens && config_.is_stop(token)) {
    pending_ = false;
    return false;
  }
  if (stats_.generated == 0) stats_.first_token_ms = now_ms() - started_;
  ++stats_.generated;
  // Feed it, so that the next call has its logits; the last token of a
  // generation is fed only when asked for one more (or by the next start()).
  if (stats_.generated >= options_.max_tokens || runner_.position() >= runner_.max_context()) {
    pending_ = false;
    unfed_ = token;  // not in the cache: the next start() feeds it first
    return true;
  }
  const double t0 = now_ms();
  TERN_CHECK_OK(runner_.feed({&token, 1}));
  const double dt = now_ms() - t0;
  stats_.decode_ms += dt;
  ++stats_.decode_steps;
  stats_.step_ms.push_back(static_cast<float>(dt));
  sequence_.push_back(token);
  return true;
}

}  // namespace tern::llm
