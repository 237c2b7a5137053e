// UTF-8 and the Unicode classes the tokenizer's pre-tokenizers use.
//
//   size_t len = utf8_decode(s, n, &cp);   // one code point (or one invalid byte)
//   CharClass k = char_class(cp);          // kLetter \p{L}, kNumber \p{N}, kSpace \s, kOther
//
//   Utf8Stream out;                         // streaming decode: never prints half a character
//   fputs(out.push(tokenizer.token_bytes(id)).c_str(), stdout);   // per generated token
//   fputs(out.flush().c_str(), stdout);                           // at the end
//
// The classes come from unicode_tables.inc (scripts/gen_unicode_tables.py;
// its stamp names the Unicode version). Stateless functions are thread-safe;
// a Utf8Stream belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern::llm {

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// Invalid UTF-8 (a stray continuation byte, a truncated or overlong sequence,
// a surrogate, a value above U+10FFFF) decodes one byte at a time as the
// pseudo code point kInvalidBase + byte, which is kOther.
constexpr uint32_t kInvalidBase = 0x110000;

// The class of code point `cp` (kOther outside Unicode's range).
CharClass char_class(uint32_t cp);

// Decodes the code point that starts s[0] (n >= 1 bytes available) into *cp;
// returns its length in bytes (1 to 4; 1 for an invalid byte).
size_t utf8_decode(const uint8_t* s, size_t n, uint32_t* cp);

// How many bytes at the end of s[0, n) are the start of a well-formed UTF-8
// sequence that is not complete yet (0 to 3): the bytes a streaming printer
// holds back until the next token brings the rest.
size_t utf8_incomplete_tail(const char* s, size_t n);

// Joins pieces of bytes (one token's each) into output that never ends in
// the middle of a UTF-8 sequence. Bytes that cannot become valid UTF-8 are
// passed through as they come, not held.
class Utf8Stream {
 public:
  // The bytes complete so far: held bytes + `bytes`, minus a trailing
  // incomplete sequence, which is held for the next call.
  std::string push(std::string_view bytes);
  // Whatever is held (an unfinished sequence at the end of the stream).
  std::string flush();

 private:
  std::string held_;
};

}  // namespace tern::llm
