#include "extension/llm/pretokenizer.h"

#include "extension/llm/unicode.h"

namespace tern::llm {
namespace {

// The text as characters: code point, class, byte offset (one extra entry
// at the end holds the text's length).
struct Chars {
  std::vector<uint32_t> cp;
  std::vector<CharClass> cls;
  std::vector<size_t> offset;
};

void decode_chars(std::string_view text, Chars* c) {
  const uint8_t* s = reinterpret_cast<const uint8_t*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp;
    size_t len = utf8_decode(s + i, text.size() - i, &cp);
    c->cp.push_back(cp);
    c->cls.push_back(char_class(cp));
    c->offset.push_back(i);
    i += len;
  }
  c->offset.push_back(text.size());
}

// A matcher returns the length in characters of the match at p in [p, e)
// (0: no alternative matches at p).
using Matcher = size_t (*)(const Chars& c, size_t p, size_t e);

size_t run_of(const Chars& c, size_t p, size_t e, CharClass k) {
  size_t q = p;
  while (q < e && c.cls[q] == k) ++q;
  return q - p;
}

bool is_cr_lf(uint32_t cp) { return cp == '\r' || cp == '\n'; }
uint32_t ascii_lower(uint32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp; }

// '(s|t|re|ve|m|ll|d), case-sensitive or (llama3) ASCII case-insensitive.
size_t contraction(const Chars& c, size_t p, size_t e, bool any_case) {
  if (c.cp[p] != '\'' || p + 1 >= e) return 0;
  auto fold = [&](size_t i) { return any_case ? ascii_lower(c.cp[i]) : c.cp[i]; };
  uint32_t a = fold(p + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (p + 2 >= e) return 0;
  uint32_t b = fold(p + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// " ?K+": an optional U+0020, then a run of class K.
size_t space_then_run(const Chars& c, size_t p, size_t e, CharClass k) {
  size_t start = c.cp[p] == ' ' ? p + 1 : p;
  size_t n = start < e ? run_of(c, start, e, k) : 0;
  if (n > 0) return start - p + n;
  // backtracking the optional space: K+ at p, but p is ' ' (a space) or not K
  return c.cls[p] == k ? run_of(c, p, e, k) : 0;
}

// \s+(?!\S): the run of spaces, less its last one when a non-space follows.
size_t spaces_not_before_nonspace(const Chars& c, size_t p, size_t e) {
  size_t n = run_of(c, p, e, kSpace);
  if (n == 0) return 0;
  if (p + n == e) return n;
  return n >= 2 ? n - 1 : 0;
}

size_t match_gpt2(const Chars& c, size_t p, size_t e) {
  if (size_t n = contraction(c, p, e, false)) return n;
  if (size_t n = space_then_run(c, p, e, kLetter)) return n;
  if (size_t n = space_then_run(c, p, e, kNumber)) return n;
  if (size_t n = space_then_run(c, p, e, kOther)) return n;
  return spaces_not_before_nonspace(c, p, e);
}

size_t match_digit(const Chars& c, size_t p, size_t e) { return c.cls[p] == kNumber ? 1 : 0; }

size_t match_llama3(const Chars& c, size_t p, size_t e) {
  if (size_t n = contraction(c, p, e, true)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.cls[p] == kLetter) return run_of(c, p, e, kLetter);
  if (c.cls[p] != kNumber && !is_cr_lf(c.cp[p]) && p + 1 < e && c.cls[p + 1] == kLetter) {
    return 1 + run_of(c, p + 1, e, kLetter);
  }
  // \p{N}{1,3}
  if (c.cls[p] == kNumber) {
    size_t n = run_of(c, p, e, kNumber);
    return n < 3 ? n : 3;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t start = c.cp[p] == ' ' ? p + 1 : p;
  if (start < e && c.cls[start] == kOther) {
    size_t q = start + run_of(c, start, e, kOther);
    while (q < e && is_cr_lf(c.cp[q])) ++q;
    return q - p;
  }
  if (c.cls[p] != kSpace) return 0;
  // \s*[\r\n]+: the spaces up to and including the run's last \r or \n
  size_t n = run_of(c, p, e, kSpace);
  for (size_t j = p + n; j > p; --j) {
    if (is_cr_lf(c.cp[j - 1])) return j - p;
  }
  // \s+(?!\S), else \s+
  if (size_t m = spaces_not_before_nonspace(c, p, e)) return m;
  return n;
}

// finditer over [b, e): matches and the text between them, in order.
void split(const Chars& c, Matcher match, size_t b, size_t e, std::vector<Piece>* out) {
  size_t at = b, p = b;
  while (p < e) {
    size_t n = match(c, p, e);
    if (n == 0) {
      ++p;
      continue;
    }
    if (p > at) out->push_back({at, p});
    out->push_back({p, p + n});
    p += n;
    at = p;
  }
  if (at < e) out->push_back({at, e});
}

}  // namespace

bool pre_tokenizer_of(std::string_view name, PreTokenizer* out) {
  if (name == "gpt2" || name == "default") {
    *out = PreTokenizer::kGpt2;
  } else if (name == "smollm" || name == "starcoder" || name == "refact") {
    *out = PreTokenizer::kDigitsGpt2;
  } else if (name == "llama3" || name == "llama-bpe") {
    *out = PreTokenizer::kLlama3;
  } else {
    return false;
  }
  return true;
}

void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<Piece>* out) {
  if (text.empty()) return;
  Chars c;
  decode_chars(text, &c);
  size_t n = c.cp.size();
  // pieces in characters, then in bytes
  std::vector<Piece> pieces;
  if (kind == PreTokenizer::kDigitsGpt2) {
    std::vector<Piece> digits;
    split(c, match_digit, 0, n, &digits);
    for (const Piece& d : digits) split(c, match_gpt2, d.begin, d.end, &pieces);
  } else {
    split(c, kind == PreTokenizer::kLlama3 ? match_llama3 : match_gpt2, 0, n, &pieces);
  }
  for (const Piece& p : pieces) out->push_back({c.offset[p.begin], c.offset[p.end]});
}

}  // namespace tern::llm
