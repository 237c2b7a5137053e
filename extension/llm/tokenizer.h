// Byte-level BPE (GGUF tokenizer.ggml.model "gpt2": GPT-2, SmolLM, Llama 3),
// read from a .tern file's "tern.llm.tokenizer" metadata.
//
//   TERN_ASSIGN_OR_RETURN(Span<const uint8_t> blob, module.metadata("tern.llm.tokenizer"));
//   TERN_ASSIGN_OR_RETURN(tern::llm::Tokenizer tok, tern::llm::Tokenizer::load(blob));
//   TERN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode("<|im_start|>user\nHi<|im_end|>\n"));
//   TERN_ASSIGN_OR_RETURN(std::string_view piece, tok.token_bytes(ids[0]));
//
// The blob (python/tern/llm/file_meta.py writes it; all integers little-endian,
// str = u32 byte length + that many bytes):
//
//   "TBPE"  u32 version (1)  str pre (tokenizer.ggml.pre, e.g. "smollm")
//   u32 n_tokens   n_tokens x { u8 type (GGUF token_type: 1 normal, 3 control,
//                               4 user-defined, ...), str text }
//   u32 n_merges   n_merges x { str "a b" }   (rank = position)
//
// Token texts are GGUF's: bytes spelled in GPT-2's printable characters
// ("Ġthe" is " the"), except control and user-defined tokens ("special"),
// whose text is itself ("<|im_end|>"). Everything is checked at load (the
// blob comes from a file): magic, version, every length against the bytes
// left, texts valid UTF-8, types 0..6, a known pre-tokenizer, each merge two
// tokens whose concatenation is a token, nothing after the merges. A
// refusal is an Error with a log line that says which entry and why.
//
// Encoding (python/tern/llm/tokenizer.py is the specification, tested equal):
// with special=true the text is first cut at special tokens' texts (leftmost,
// then longest); every other span is cut by the pre-tokenizer
// (pretokenizer.h), and each piece's bytes are merged pair by pair, always
// the pair of lowest merge rank, the leftmost of equals, until none is left.
// No BOS or EOS is added. A byte with no token is an error (the vocabularies
// this reads have all 256).
//
// Decoding: a token's bytes are its text mapped back through GPT-2's byte
// map (a character outside the map is '?'); a special token's bytes are its
// text. decode() may end inside a UTF-8 sequence; for streaming, pass
// token_bytes() through a Utf8Stream (unicode.h).
//
// Thread safety: after load, every method is const and may be called from
// any number of threads. encode() allocates; token_bytes() does not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "extension/llm/pretokenizer.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern::llm {

class Tokenizer {
 public:
  // Reads and checks a "tern.llm.tokenizer" blob; keeps no pointer into it.
  static Result<Tokenizer> load(Span<const uint8_t> blob);

  // The token ids of `text` (UTF-8; invalid bytes are tokenized as single
  // bytes). Fails (InvalidArgument) only on a byte the vocabulary has no token for.
  Result<std::vector<int32_t>> encode(std::string_view text, bool special = true) const;

  // The bytes of token `id` (a view into the tokenizer); InvalidArgument
  // if id is outside [0, vocab_size()).
  Result<std::string_view> token_bytes(int32_t id) const;

  // The bytes of `ids` concatenated; InvalidArgument naming the first bad id.
  Result<std::string> decode(Span<const int32_t> ids) const;

  // The id of the token whose GGUF text is `text` (the last such, as
  // GGUF readers do), or -1.
  int32_t token_id(std::string_view text) const;

  size_t vocab_size() const { return types_.size(); }
  uint8_t token_type(int32_t id) const { return types_[id]; }  // id < vocab_size()
  bool is_special(int32_t id) const;                            // control or user-defined
  PreTokenizer pre_tokenizer() const { return pre_; }
  size_t num_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // the id of the merged symbol
  };
  struct Special {
    std::string text;
    int32_t id;
  };

  Tokenizer() = default;
  Error read(Span<const uint8_t> blob);
  Error index_tokens(const std::vector<std::string>& texts);
  Error index_merges(const std::vector<std::string>& merges);
  Error bpe(std::string_view piece, std::vector<int32_t>* out) const;
  size_t match_special(std::string_view text, size_t at) const;

  PreTokenizer pre_ = PreTokenizer::kGpt2;
  std::vector<uint8_t> types_;                        // [vocab]
  std::string bytes_;                                 // every token's bytes, back to back
  std::vector<uint32_t> bytes_at_;                    // [vocab + 1] offsets into bytes_
  std::unordered_map<std::string, int32_t> id_of_;    // GGUF text -> id
  int32_t byte_id_[256];                              // byte -> id of its one-byte token, or -1
  std::unordered_map<uint64_t, Merge> merges_;        // (left id << 32 | right id) -> merge
  std::vector<Special> specials_;                     // longest first
  std::vector<std::vector<uint32_t>> special_by_first_;  // [256] indices into specials_
};

}  // namespace tern::llm
