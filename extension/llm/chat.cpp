#include "extension/llm/chat.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "extension/llm/unicode.h"
#include "runtime/core/log.h"

namespace tern::llm {
namespace {

constexpr char kWhere[] = "tern.llm.config";

// Python's str.isspace(): White_Space and U+001C..U+001F.
bool py_space(uint32_t cp) { return char_class(cp) == kSpace || (cp >= 0x1C && cp <= 0x1F); }

// Python's str.strip() on UTF-8.
std::string_view strip(std::string_view s) {
  const uint8_t* u = reinterpret_cast<const uint8_t*>(s.data());
  size_t b = 0, e = s.size();
  while (b < e) {
    uint32_t cp;
    size_t n = utf8_decode(u + b, e - b, &cp);
    if (!py_space(cp)) break;
    b += n;
  }
  while (e > b) {
    size_t start = e - 1;  // the last character's first byte
    while (start > b && e - start < 4 && (u[start] & 0xC0) == 0x80) --start;
    uint32_t cp;
    size_t n = utf8_decode(u + start, e - start, &cp);
    if (start + n != e) start = e - 1, cp = kInvalidBase;  // an invalid tail byte: not a space
    if (!py_space(cp)) break;
    e = start;
  }
  return s.substr(b, e - b);
}

bool unescape(std::string_view v, std::string* out) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '\\') {
      out->push_back(v[i]);
      continue;
    }
    if (i + 1 == v.size() || (v[i + 1] != 'n' && v[i + 1] != '\\')) return false;
    out->push_back(v[++i] == 'n' ? '\n' : '\\');
  }
  return true;
}

template <typename T>
bool parse_int(const std::string& s, T lo, T hi, T* out) {
  T v;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_float(const std::string& s, float* out) {
  double v;  // locale-independent, unlike strtod
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v) || std::fabs(v) > 3.0e38) return false;
  *out = static_cast<float>(v);
  return true;
}

bool parse_ids(const std::string& s, std::vector<int32_t>* out) {
  size_t at = 0;
  while (at < s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    int32_t id;
    if (!parse_int<int32_t>(s.substr(at, comma - at), 0, INT32_MAX, &id)) return false;
    out->push_back(id);
    at = comma + 1;
    if (comma + 1 == s.size()) return false;  // a trailing comma
  }
  return true;
}

// Sets the field of `key` from `value`; false if the value is malformed.
bool set_field(LlmConfig* c, const std::string& key, const std::string& value) {
  ChatFormat& f = c->chat;
  std::string* text = nullptr;
  bool* flag = nullptr;
  if (key == "bos") return parse_int<int32_t>(value, 0, INT32_MAX, &c->bos);
  if (key == "eos") return parse_int<int32_t>(value, 0, INT32_MAX, &c->eos);
  if (key == "add_bos") flag = &c->add_bos;
  if (key == "stop") return parse_ids(value, &c->stop);
  if (key == "temperature") return parse_float(value, &c->temperature);
  if (key == "top_k") return parse_int<int32_t>(value, 0, INT32_MAX, &c->top_k);
  if (key == "top_p") return parse_float(value, &c->top_p);
  if (key == "repeat_penalty") return parse_float(value, &c->repeat_penalty) && c->repeat_penalty > 0;
  if (key == "repeat_last_n") return parse_int<int32_t>(value, 0, INT32_MAX, &c->repeat_last_n);
  if (key == "max_context") return parse_int<int64_t>(value, 1, INT64_MAX, &c->max_context);
  if (key.compare(0, 5, "chat.") == 0) {
    std::string k = key.substr(5);
    const std::pair<const char*, std::string*> texts[] = {
        {"system_prefix", &f.system_prefix},       {"system_suffix", &f.system_suffix},
        {"user_prefix", &f.user_prefix},           {"user_suffix", &f.user_suffix},
        {"assistant_prefix", &f.assistant_prefix}, {"assistant_suffix", &f.assistant_suffix},
        {"generation_prompt", &f.generation_prompt}, {"default_system", &f.default_system}};
    for (const auto& t : texts) {
      if (k == t.first) text = t.second;
    }
    if (k == "bos_in_template") flag = &f.bos_in_template;
    if (k == "trim_content") flag = &f.trim_content;
    if (text != nullptr || flag != nullptr) c->has_chat = true;
  }
  if (text != nullptr) *text = value;
  if (flag != nullptr) {
    if (value != "0" && value != "1") return false;
    *flag = value == "1";
  }
  return true;  // a key this version does not know: kept in entries only
}

}  // namespace

Result<LlmConfig> LlmConfig::parse(Span<const uint8_t> bytes) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  LlmConfig c;
  size_t at = 0, line = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(at, nl - at);
    at = nl + 1;
    ++line;
    if (l.empty()) continue;
    size_t eq = l.find('=');
    std::string key(l.substr(0, eq == std::string_view::npos ? 0 : eq)), value;
    if (eq == std::string_view::npos || key.empty()) {
      TERN_LOG_ERROR("%s: line %zu is not key=value", kWhere, line);
      return Error::InvalidProgram;
    }
    if (!unescape(l.substr(eq + 1), &value)) {
      TERN_LOG_ERROR("%s: line %zu (%s): a backslash not followed by n or a backslash", kWhere, line, key.c_str());
      return Error::InvalidProgram;
    }
    if (!set_field(&c, key, value)) {
      TERN_LOG_ERROR("%s: line %zu: %s has a malformed or out-of-range value", kWhere, line, key.c_str());
      return Error::InvalidProgram;
    }
    c.entries.emplace_back(std::move(key), std::move(value));
  }
  if (c.max_context == 0) {
    TERN_LOG_ERROR("%s: no max_context", kWhere);
    return Error::InvalidProgram;
  }
  return c;
}

Error LlmConfig::check_vocab(size_t vocab_size) const {
  auto bad = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) >= vocab_size; };
  const char* which = bad(bos) ? "bos" : bad(eos) ? "eos" : nullptr;
  for (int32_t id : stop) {
    if (bad(id) && which == nullptr) which = "a stop token";
  }
  if (which != nullptr) {
    TERN_LOG_ERROR("%s: %s is not a token of the vocabulary (%zu tokens)", kWhere, which, vocab_size);
    return Error::InvalidProgram;
  }
  return Error::Ok;
}

bool LlmConfig::is_stop(int32_t id) const {
  for (int32_t s : stop) {
    if (s == id) return true;
  }
  return false;
}

SamplerOptions LlmConfig::sampler_options(uint64_t seed) const {
  SamplerOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.seed = seed;
  return o;
}

Result<std::string> ChatFormat::build_prompt(Span<const ChatMessage> messages, bool add_generation_prompt) const {
  std::string out;
  auto add = [&](const std::string& prefix, std::string_view content, const std::string& suffix) {
    out += prefix;
    out += trim_content ? strip(content) : content;
    out += suffix;
  };
  if (!messages.empty() && messages[0].role != "system" && !default_system.empty()) {
    add(system_prefix, default_system, system_suffix);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      add(system_prefix, m.content, system_suffix);
    } else if (m.role == "user") {
      add(user_prefix, m.content, user_suffix);
    } else if (m.role == "assistant") {
      add(assistant_prefix, m.content, assistant_suffix);
    } else {
      TERN_LOG_ERROR("chat message %zu: role '%s' (the chat format knows system, user and assistant)", i,
                     m.role.c_str());
      return Error::InvalidArgument;
    }
  }
  if (add_generation_prompt) out += generation_prompt;
  return out;
}

}  // namespace tern::llm
