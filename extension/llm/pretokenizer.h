// The pre-tokenizers of byte-level BPE: the regexes that cut text into the
// pieces BPE merges within, written out by hand as matchers.
//
//   std::vector<Piece> pieces;
//   pre_tokenize(PreTokenizer::kLlama3, text, &pieces);  // byte ranges of text, in order, covering it
//
// The specification is python/tern/llm/tokenizer.py's PRE_TOKENIZERS: each
// regex in turn cuts every piece into its matches and the text between them
// (both kept), with the semantics of the `regex` module's finditer: at each
// position the first alternative that matches (greedy, backtracking) wins; no
// match moves on by one character. The patterns:
//
//   gpt2, default             '(s|t|re|ve|m|ll|d) | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S)
//   smollm, starcoder, refact \p{N}  (each digit alone), then gpt2 on every piece
//   llama3, llama-bpe         '(?i:s|t|re|ve|m|ll|d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3}
//                             | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//
// (' ' is U+0020; (?i:) here is ASCII case only, as [sS] in the original.)
// Classes are unicode.h's. Bytes that are not valid UTF-8 are each one
// character of class "other". Thread-safe (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tern::llm {

enum class PreTokenizer : uint8_t { kGpt2, kDigitsGpt2, kLlama3 };

// The pre-tokenizer of a GGUF tokenizer.ggml.pre name; false if unknown.
bool pre_tokenizer_of(std::string_view name, PreTokenizer* out);

struct Piece {
  size_t begin;  // byte offsets into the text
  size_t end;
};

// Appends the pieces of `text` to *out (none for an empty text).
void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<Piece>* out);

}  // namespace tern::llm
