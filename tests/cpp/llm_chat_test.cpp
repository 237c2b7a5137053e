// extension/llm/chat.h: "tern.llm.config" as file_meta.py writes it, its
// refusals, and the prompts of a ChatML format. (test_llm_chat_format.py
// checks the prompts against the Jinja templates' own rendering.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "extension/llm/chat.h"
#include "runtime/core/log.h"

namespace {

using tern::Error;
using tern::llm::ChatMessage;
using tern::llm::LlmConfig;

tern::Result<LlmConfig> parse(const std::string& text) {
  tern::clear_last_error();
  return LlmConfig::parse({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

const char kSmolLM2[] =
    "bos=1\neos=2\nadd_bos=0\nstop=2\ntemperature=0.8\ntop_k=40\ntop_p=0.95\nmax_context=8192\n"
    "chat.system_prefix=<|im_start|>system\\n\nchat.system_suffix=<|im_end|>\\n\n"
    "chat.user_prefix=<|im_start|>user\\n\nchat.user_suffix=<|im_end|>\\n\n"
    "chat.assistant_prefix=<|im_start|>assistant\\n\nchat.assistant_suffix=<|im_end|>\\n\n"
    "chat.generation_prompt=<|im_start|>assistant\\n\n"
    "chat.default_system=You are a helpful AI assistant named SmolLM, trained by Hugging Face\n"
    "chat.bos_in_template=0\nchat.trim_content=0\nsome.future_key=a\\\\b\n";

std::string prompt(const LlmConfig& c, const std::vector<ChatMessage>& m, bool gen = true) {
  auto p = c.chat.build_prompt({m.data(), m.size()}, gen);
  EXPECT_TRUE(p.ok()) << tern::last_error_message();
  return p.ok() ? *p : "";
}

TEST(LlmChat, ReadsTheConfigFileMetaWrites) {
  auto c = parse(kSmolLM2);
  ASSERT_TRUE(c.ok()) << tern::last_error_message();
  EXPECT_EQ(c->bos, 1);
  EXPECT_EQ(c->eos, 2);
  EXPECT_FALSE(c->add_bos);
  EXPECT_EQ(c->stop, (std::vector<int32_t>{2}));
  EXPECT_TRUE(c->is_stop(2) && !c->is_stop(1));
  EXPECT_EQ(c->temperature, 0.8f);
  EXPECT_EQ(c->top_k, 40);
  EXPECT_EQ(c->top_p, 0.95f);
  EXPECT_EQ(c->repeat_penalty, 1.0f);
  EXPECT_EQ(c->max_context, 8192);
  EXPECT_TRUE(c->has_chat);
  EXPECT_EQ(c->chat.user_prefix, "<|im_start|>user\n");
  EXPECT_FALSE(c->prompt_starts_with_bos());
  EXPECT_EQ(c->entries.back(), (std::pair<std::string, std::string>{"some.future_key", "a\\b"}));
  EXPECT_EQ(c->check_vocab(49152), Error::Ok);
  EXPECT_EQ(c->check_vocab(2), Error::InvalidProgram);
  EXPECT_NE(strstr(tern::last_error_message(), "eos is not a token of the vocabulary (2 tokens)"), nullptr);
  tern::llm::SamplerOptions o = c->sampler_options(5);
  EXPECT_EQ(o.top_k, 40);
  EXPECT_EQ(o.seed, 5u);
}

TEST(LlmChat, BuildsChatMLPromptsWithTheDefaultSystemMessage) {
  auto c = parse(kSmolLM2);
  ASSERT_TRUE(c.ok());
  const std::string sys = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                          "<|im_end|>\n";
  EXPECT_EQ(prompt(*c, {{"user", "Hi"}}), sys + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(prompt(*c, {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n");
  EXPECT_EQ(prompt(*c, {}, true), "<|im_start|>assistant\n");
  std::vector<ChatMessage> bad = {{"user", "x"}, {"tool", "y"}};
  auto p = c->chat.build_prompt({bad.data(), bad.size()});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(), Error::InvalidArgument);
  EXPECT_NE(strstr(tern::last_error_message(), "chat message 1: role 'tool'"), nullptr);
}

TEST(LlmChat, TrimsContentsAsPythonsStripWhenTheTemplateDoes) {
  auto c = parse(
      "bos=0\nadd_bos=1\nmax_context=4\nchat.user_prefix=[\nchat.user_suffix=]\nchat.bos_in_template=1\n"
      "chat.trim_content=1\n");
  ASSERT_TRUE(c.ok()) << tern::last_error_message();
  EXPECT_TRUE(c->prompt_starts_with_bos());
  EXPECT_EQ(prompt(*c, {{"user", " \n\t a b \xE3\x80\x80\x1f"}}), "[a b]");  // U+3000 and U+001F are stripped
  EXPECT_EQ(prompt(*c, {{"user", "x\xC2"}}), "[x\xC2]");                     // an invalid last byte stays
}

TEST(LlmChat, MalformedConfigsAreRefusedByLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"max_context=4\nnot a pair\n", "line 2 is not key=value"},
      {"=x\nmax_context=4\n", "line 1 is not key=value"},
      {"max_context=4\nchat.user_prefix=a\\tb\n", "line 2 (chat.user_prefix): a backslash"},
      {"max_context=4\nchat.user_prefix=a\\\n", "line 2 (chat.user_prefix): a backslash"},
      {"bos=-1\nmax_context=4\n", "line 1: bos has a malformed or out-of-range value"},
      {"bos=12x\nmax_context=4\n", "line 1: bos has"},
      {"eos=99999999999\nmax_context=4\n", "line 1: eos has"},
      {"add_bos=2\nmax_context=4\n", "line 1: add_bos has"},
      {"stop=1,,2\nmax_context=4\n", "line 1: stop has"},
      {"stop=1,2,\nmax_context=4\n", "line 1: stop has"},
      {"temperature=nan\nmax_context=4\n", "line 1: temperature has"},
      {"top_p=1e99\nmax_context=4\n", "line 1: top_p has"},
      {"repeat_penalty=0\nmax_context=4\n", "line 1: repeat_penalty has"},
      {"max_context=0\n", "line 1: max_context has"},
      {"chat.trim_content=yes\nmax_context=4\n", "line 1: chat.trim_content has"},
      {"temperature=0.5\n", "no max_context"},
  };
  for (const Case& c : cases) {
    auto r = parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error(), Error::InvalidProgram);
    EXPECT_NE(strstr(tern::last_error_message(), c.message), nullptr) << c.text << ": " << tern::last_error_message();
  }
}

}  // namespace
