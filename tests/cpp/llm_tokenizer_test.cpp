// extension/llm/tokenizer.h: a tiny vocabulary built here (every byte, a few
// merges, special tokens); the blob's checks, one refusal per way a file
// can be wrong; UTF-8 streaming. (tests/python/test_llm_tokenizer_cpp.py
// compares the ids with tokenizer.py and Hugging Face on real vocabularies.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "extension/llm/pretokenizer.h"
#include "extension/llm/tokenizer.h"
#include "extension/llm/unicode.h"
#include "runtime/core/log.h"

namespace {

using tern::Error;
using tern::llm::Tokenizer;

// GPT-2's byte -> character map, as UTF-8.
std::string byte_char(int b) {
  bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  int extra = 0;
  for (int x = 0; x < b; ++x) {
    if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++extra;
  }
  unsigned cp = keep ? b : 256 + extra;
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | cp >> 6));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

struct Blob {
  std::string b;
  Blob& raw(const std::string& s) { return b += s, *this; }
  Blob& u8(uint8_t v) { return b.push_back(static_cast<char>(v)), *this; }
  Blob& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  Blob& str(const std::string& s) { return u32(static_cast<uint32_t>(s.size())).raw(s); }
};

struct Vocab {
  std::string pre = "gpt2";
  std::vector<std::pair<uint8_t, std::string>> tokens;
  std::vector<std::string> merges;
};

// Ids 0..255: the bytes; then merged tokens; then special tokens.
Vocab tiny_vocab() {
  Vocab v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back({1, byte_char(b)});
  const char* merged[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "or", "\xC4\xA0wor", "aa"};
  for (const char* t : merged) v.tokens.push_back({1, t});
  v.tokens.push_back({3, "<|end|>"});
  v.tokens.push_back({4, "<|end|>x"});
  v.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or", "a a"};
  return v;
}

std::string blob_of(const Vocab& v) {
  Blob b;
  b.raw("TBPE").u32(1).str(v.pre).u32(static_cast<uint32_t>(v.tokens.size()));
  for (const auto& t : v.tokens) b.u8(t.first).str(t.second);
  b.u32(static_cast<uint32_t>(v.merges.size()));
  for (const auto& m : v.merges) b.str(m);
  return b.b;
}

tern::Result<Tokenizer> load(const std::string& blob) {
  tern::clear_last_error();
  return Tokenizer::load({reinterpret_cast<const uint8_t*>(blob.data()), blob.size()});
}

std::vector<int32_t> encode(const Tokenizer& t, const std::string& s, bool special = true) {
  auto r = t.encode(s, special);
  EXPECT_TRUE(r.ok()) << tern::last_error_message();
  return r.ok() ? *r : std::vector<int32_t>{};
}

// The refusal of a blob: its error, and its log line holds `message`.
void expect_refused(const std::string& blob, Error error, const char* message) {
  auto r = load(blob);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), error);
  EXPECT_NE(strstr(tern::last_error_message(), message), nullptr) << tern::last_error_message();
}

TEST(LlmTokenizer, EncodesByLowestRankMergesAndDecodesBack) {
  auto t = load(blob_of(tiny_vocab()));
  ASSERT_TRUE(t.ok()) << tern::last_error_message();
  EXPECT_EQ(t->vocab_size(), 266u);
  EXPECT_EQ(t->num_merges(), 8u);
  // "hello" | " world": hello = 259, " wor" = 262, l, d
  EXPECT_EQ(encode(*t, "hello world"), (std::vector<int32_t>{259, 262, 'l', 'd'}));
  // "aaa": the leftmost pair of equal rank merges first
  EXPECT_EQ(encode(*t, "aaa"), (std::vector<int32_t>{263, 'a'}));
  std::vector<int32_t> ids = encode(*t, "hello world");
  auto text = t->decode({ids.data(), ids.size()});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello world");
  EXPECT_TRUE(encode(*t, "").empty());
}

TEST(LlmTokenizer, SpecialTokensMatchLongestFirstAndOnlyWhenAsked) {
  auto t = load(blob_of(tiny_vocab()));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(encode(*t, "<|end|>"), (std::vector<int32_t>{264}));
  EXPECT_EQ(encode(*t, "<|end|>x<|end|>"), (std::vector<int32_t>{265, 264}));
  EXPECT_TRUE(t->is_special(264) && t->is_special(265) && !t->is_special(259));
  std::vector<int32_t> plain = encode(*t, "<|end|>", false);
  EXPECT_GT(plain.size(), 1u);
  auto back = t->decode({plain.data(), plain.size()});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "<|end|>");
  auto special = t->token_bytes(264);
  ASSERT_TRUE(special.ok());
  EXPECT_EQ(*special, "<|end|>");
}

TEST(LlmTokenizer, AnIdOutsideTheVocabularyIsRefused) {
  auto t = load(blob_of(tiny_vocab()));
  ASSERT_TRUE(t.ok());
  for (int32_t id : {-1, 266, INT32_MAX}) {
    auto b = t->token_bytes(id);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error(), Error::InvalidArgument);
  }
  std::vector<int32_t> ids = {1, 2, 9999};
  EXPECT_FALSE(t->decode({ids.data(), ids.size()}).ok());
  EXPECT_NE(strstr(tern::last_error_message(), "token id 9999 is outside the vocabulary (0 .. 265)"), nullptr);
}

TEST(LlmTokenizer, InvalidUtf8IsTokenizedByteByByte) {
  auto t = load(blob_of(tiny_vocab()));
  ASSERT_TRUE(t.ok());
  std::string bad = "a\xFF\xC3(\xE2\x82";
  std::vector<int32_t> ids = encode(*t, bad);
  auto back = t->decode({ids.data(), ids.size()});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bad);
}

TEST(LlmTokenizer, EveryTruncationIsRefused) {
  std::string blob = blob_of(tiny_vocab());
  for (size_t n = 0; n < blob.size(); ++n) {
    auto r = load(blob.substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error(), Error::InvalidProgram) << n;
  }
  expect_refused(blob.substr(0, blob.size() - 1), Error::InvalidProgram, "merge 7 runs past the end of the blob");
  expect_refused(blob.substr(0, 40), Error::InvalidProgram, "266 tokens, but the 20 bytes left hold at most 4");
}

TEST(LlmTokenizer, AWrongHeaderIsRefused) {
  std::string blob = blob_of(tiny_vocab());
  expect_refused("", Error::InvalidProgram, "not a tokenizer blob");
  expect_refused("TBPX" + blob.substr(4), Error::InvalidProgram, "not a tokenizer blob (the magic is not \"TBPE\"");
  std::string v2 = blob;
  v2[4] = 2;
  expect_refused(v2, Error::UnsupportedVersion, "version 2; this runtime reads version 1");
  Vocab v = tiny_vocab();
  v.pre = "bloom";
  expect_refused(blob_of(v), Error::NotSupported, "pre-tokenizer 'bloom' is not known");
  expect_refused(blob + "x", Error::InvalidProgram, "1 bytes after the last merge");
}

TEST(LlmTokenizer, HugeCountsAndLengthsAreRefusedBeforeAllocating) {
  std::string head = Blob().raw("TBPE").u32(1).str("gpt2").b;
  expect_refused(Blob().raw(head).u32(0xFFFFFFFFu).b + std::string(100, 'x'), Error::InvalidProgram,
                 "4294967295 tokens, but the 100 bytes left hold at most 20");
  expect_refused(Blob().raw(head).u32(0).b, Error::InvalidProgram, "0 tokens");
  expect_refused(Blob().raw(head).u32(2).u8(1).u32(0x7FFFFFFF).raw("abcdef").b, Error::InvalidProgram,
                 "token 0 runs past the end of the blob");
  expect_refused(Blob().raw("TBPE").u32(1).u32(0xFFFFFFF0u).b, Error::InvalidProgram,
                 "pre-tokenizer name 0 runs past the end");
  Vocab v = tiny_vocab();
  v.merges.clear();
  std::string blob = blob_of(v);
  blob.resize(blob.size() - 4);
  expect_refused(Blob().raw(blob).u32(1000000).raw("abcd").b, Error::InvalidProgram,
                 "1000000 merges, but the 4 bytes left hold at most 1");
}

TEST(LlmTokenizer, BadTokensAndMergesAreRefusedByIndex) {
  Vocab v = tiny_vocab();
  v.tokens[7].first = 9;
  expect_refused(blob_of(v), Error::InvalidProgram, "token 7 has type 9; GGUF token types are 0 to 6");
  v = tiny_vocab();
  v.tokens[260].second = "\xC3";
  expect_refused(blob_of(v), Error::InvalidProgram, "token 260's text is not valid UTF-8");
  v = tiny_vocab();
  v.merges[2] = "he lx";
  expect_refused(blob_of(v), Error::InvalidProgram, "merge 2: its second symbol is not a token of the vocabulary");
  v = tiny_vocab();
  v.merges[3] = "nope o";
  expect_refused(blob_of(v), Error::InvalidProgram, "merge 3: its first symbol is not a token");
  v = tiny_vocab();
  v.merges.push_back("a b");  // "ab" is not a token
  expect_refused(blob_of(v), Error::InvalidProgram, "merge 8: the merged symbol is not a token");
  v = tiny_vocab();
  v.merges[0] = "he";
  expect_refused(blob_of(v), Error::InvalidProgram, "merge 0 is not two symbols separated by a space");
}

TEST(LlmTokenizer, AByteWithoutATokenIsAnEncodingError) {
  Vocab v = tiny_vocab();
  v.tokens['Z'].second = "ZZ";  // byte 'Z' has no one-byte token now
  auto t = load(blob_of(v));
  ASSERT_TRUE(t.ok()) << tern::last_error_message();
  auto r = t->encode("aZ");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::InvalidArgument);
  EXPECT_NE(strstr(tern::last_error_message(), "byte 0x5a has no token in the vocabulary"), nullptr);
}

// Blobs damaged at random (fixed seed): each either loads, and then encodes
// and decodes without harm, or is refused. Under ASan and UBSan
// (make test-sanitize) this is a small fuzz run of the reader.
TEST(LlmTokenizer, RandomlyDamagedBlobsLoadOrAreRefused) {
  const std::string good = blob_of(tiny_vocab());
  uint64_t state = 12345;
  auto next = [&]() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  tern::set_log_level(tern::LogLevel::Fatal);  // thousands of refusals
  int loaded = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string b = good;
    for (int edits = 1 + next() % 4; edits > 0; --edits) {
      size_t at = next() % b.size();
      switch (next() % 4) {
        case 0: b[at] = static_cast<char>(next()); break;               // a byte
        case 1: b[at] = static_cast<char>(b[at] ^ (1 << next() % 8)); break;  // a bit
        case 2: b.erase(at, 1 + next() % 8); break;                       // bytes gone
        default: b.insert(at, std::string(1 + next() % 4, static_cast<char>(next()))); break;
      }
      if (b.empty()) b = "T";
    }
    auto t = load(b);
    if (!t.ok()) continue;
    ++loaded;
    auto ids = t->encode("hello world <|end|>x ð¦ aaa");
    if (ids.ok()) {
      auto text = t->decode({ids->data(), ids->size()});
      EXPECT_TRUE(text.ok());
    }
  }
  tern::set_log_level(tern::LogLevel::Info);
  EXPECT_GT(loaded, 0);  // some damage leaves a valid vocabulary (a changed text, type or merge)
}

std::vector<std::string> pieces(tern::llm::PreTokenizer kind, const std::string& text) {
  std::vector<tern::llm::Piece> p;
  tern::llm::pre_tokenize(kind, text, &p);
  std::vector<std::string> out;
  for (const auto& x : p) out.push_back(text.substr(x.begin, x.end - x.begin));
  return out;
}

TEST(LlmPreTokenizer, CutsAsTheRegexesDo) {
  using P = tern::llm::PreTokenizer;
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(P::kGpt2, "It's  a\ttest 123!!\n"), (V{"It", "'s", " ", " a", "\t", "test", " 123", "!!", "\n"}));
  EXPECT_EQ(pieces(P::kDigitsGpt2, "a 123"), (V{"a", " ", "1", "2", "3"}));
  EXPECT_EQ(pieces(P::kLlama3, "IT'S 12345\r\n\n  x!\n"), (V{"IT", "'S", " ", "123", "45", "\r\n\n", " ", " x", "!\n"}));
  EXPECT_EQ(pieces(P::kLlama3, "\tword  \n "), (V{"\tword", "  \n", " "}));
  EXPECT_TRUE(pieces(P::kGpt2, "").empty());
  tern::llm::PreTokenizer k;
  EXPECT_TRUE(tern::llm::pre_tokenizer_of("llama-bpe", &k) && k == P::kLlama3);
  EXPECT_FALSE(tern::llm::pre_tokenizer_of("bloom", &k));
}

TEST(LlmUnicode, ClassesComeFromTheTables) {
  using namespace tern::llm;
  EXPECT_EQ(char_class('a'), kLetter);
  EXPECT_EQ(char_class(0x6771), kLetter);   // 東
  EXPECT_EQ(char_class(0x0663), kNumber);   // ARABIC-INDIC DIGIT THREE
  EXPECT_EQ(char_class(0x216B), kNumber);   // ROMAN NUMERAL TWELVE (Nl)
  EXPECT_EQ(char_class(0x3000), kSpace);    // IDEOGRAPHIC SPACE
  EXPECT_EQ(char_class(0x001C), kOther);    // not White_Space (str.isspace says yes)
  EXPECT_EQ(char_class(0x0301), kOther);    // COMBINING ACUTE ACCENT (Mn)
  EXPECT_EQ(char_class(0x1F98A), kOther);   // 🦊
  EXPECT_EQ(char_class(0x110000), kOther);
}

TEST(LlmUnicode, StreamingHoldsBackAnIncompleteSequenceOnly) {
  tern::llm::Utf8Stream s;
  std::string fox = "\xF0\x9F\xA6\x8A";  // 🦊
  EXPECT_EQ(s.push("a" + fox.substr(0, 1)), "a");
  EXPECT_EQ(s.push(fox.substr(1, 2)), "");
  EXPECT_EQ(s.push(fox.substr(3) + "b"), fox + "b");
  EXPECT_EQ(s.push("\xC3"), "");
  EXPECT_EQ(s.push("\xA9"), "\xC3\xA9");
  EXPECT_EQ(s.push("\xFF"), "\xFF");               // never valid: passed on
  EXPECT_EQ(s.push("\xE2\x28"), "\xE2\x28");       // a lead byte whose next byte is not a continuation
  EXPECT_EQ(s.push("x\xE2\x82"), "x");
  EXPECT_EQ(s.flush(), "\xE2\x82");
  EXPECT_EQ(s.flush(), "");
}

}  // namespace
