#include "extension/llm/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <unordered_set>

#include "extension/llm/unicode.h"
#include "runtime/core/log.h"

namespace tern::llm {
namespace {

constexpr char kWhere[] = "tern.llm.tokenizer";
constexpr uint32_t kVersion = 1;
constexpr uint8_t kMaxTokenType = 6;  // GGUF: 0 undefined .. 6 byte
constexpr uint8_t kControl = 3, kUserDefined = 4;

// Little-endian reads that never pass the end; each failure logs what it
// was reading and where.
class BlobReader {
 public:
  explicit BlobReader(Span<const uint8_t> b) : b_(b) {}
  size_t offset() const { return at_; }
  size_t left() const { return b_.size() - at_; }

  bool u8(uint8_t* v, const char* what, size_t index) {
    if (!need(1, what, index)) return false;
    *v = b_[at_++];
    return true;
  }
  bool u32(uint32_t* v, const char* what, size_t index) {
    if (!need(4, what, index)) return false;
    const uint8_t* p = b_.data() + at_;
    *v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    at_ += 4;
    return true;
  }
  bool str(std::string_view* v, const char* what, size_t index) {
    uint32_t n;
    if (!u32(&n, what, index) || !need(n, what, index)) return false;
    *v = std::string_view(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return true;
  }

 private:
  bool need(size_t n, const char* what, size_t index) {
    if (n <= left()) return true;
    TERN_LOG_ERROR("%s: %s %zu runs past the end of the blob (offset %zu: %zu bytes needed, %zu left)", kWhere,
                   what, index, at_, n, left());
    return false;
  }

  Span<const uint8_t> b_;
  size_t at_ = 0;
};

bool valid_utf8(std::string_view s) {
  const uint8_t* u = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    i += utf8_decode(u + i, s.size() - i, &cp);
    if (cp >= kInvalidBase) return false;
  }
  return true;
}

// GPT-2's byte -> printable code point map: bytes that print as themselves
// keep their value; the others take 256, 257, ... in byte order.
struct ByteMap {
  uint32_t cp_of[256];
  int16_t byte_of[256 + 68];  // code point -> byte, -1 if none
  ByteMap() {
    for (int16_t& b : byte_of) b = -1;
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      cp_of[b] = keep ? b : 256 + extra++;
      byte_of[cp_of[b]] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap kBytes;

void append_utf8(uint32_t cp, std::string* out) {  // cp < 0x800 here
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A GGUF token text (valid UTF-8) back to bytes.
void text_to_bytes(std::string_view text, std::string* out) {
  const uint8_t* u = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp;
    i += utf8_decode(u + i, text.size() - i, &cp);
    int b = cp < sizeof(kBytes.byte_of) / sizeof(kBytes.byte_of[0]) ? kBytes.byte_of[cp] : -1;
    out->push_back(b >= 0 ? static_cast<char>(b) : '?');
  }
}

uint64_t pair_key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }

}  // namespace

Result<Tokenizer> Tokenizer::load(Span<const uint8_t> blob) {
  Tokenizer t;
  Error e = t.read(blob);
  if (e != Error::Ok) return e;
  return t;
}

Error Tokenizer::read(Span<const uint8_t> blob) {
  BlobReader r(blob);
  if (blob.size() < 4 || std::memcmp(blob.data(), "TBPE", 4) != 0) {
    TERN_LOG_ERROR("%s: not a tokenizer blob (the magic is not \"TBPE\"; %zu bytes)", kWhere, blob.size());
    return Error::InvalidProgram;
  }
  uint32_t magic, version;
  std::string_view pre;
  if (!r.u32(&magic, "header", 0) || !r.u32(&version, "header", 0)) return Error::InvalidProgram;
  if (version != kVersion) {
    TERN_LOG_ERROR("%s: version %u; this runtime reads version %u", kWhere, version, kVersion);
    return Error::UnsupportedVersion;
  }
  if (!r.str(&pre, "pre-tokenizer name", 0)) return Error::InvalidProgram;
  if (!pre_tokenizer_of(pre, &pre_)) {
    TERN_LOG_ERROR("%s: pre-tokenizer '%.*s' is not known (known: gpt2, default, smollm, starcoder, refact, "
                   "llama3, llama-bpe)", kWhere, static_cast<int>(std::min<size_t>(pre.size(), 64)), pre.data());
    return Error::NotSupported;
  }
  uint32_t n_tokens;
  if (!r.u32(&n_tokens, "token count", 0)) return Error::InvalidProgram;
  // each token takes at least 5 bytes: refuse a count the blob cannot hold
  // before allocating for it
  if (n_tokens == 0 || n_tokens > r.left() / 5 || n_tokens > INT32_MAX) {
    TERN_LOG_ERROR("%s: %u tokens, but the %zu bytes left hold at most %zu (and at least one is needed)", kWhere,
                   n_tokens, r.left(), r.left() / 5);
    return Error::InvalidProgram;
  }
  std::vector<std::string> texts(n_tokens);
  types_.resize(n_tokens);
  for (uint32_t i = 0; i < n_tokens; ++i) {
    std::string_view text;
    if (!r.u8(&types_[i], "token", i) || !r.str(&text, "token", i)) return Error::InvalidProgram;
    if (types_[i] > kMaxTokenType) {
      TERN_LOG_ERROR("%s: token %u has type %u; GGUF token types are 0 to %u", kWhere, i, types_[i], kMaxTokenType);
      return Error::InvalidProgram;
    }
    if (!valid_utf8(text)) {
      TERN_LOG_ERROR("%s: token %u's text is not valid UTF-8", kWhere, i);
      return Error::InvalidProgram;
    }
    texts[i].assign(text.data(), text.size());
  }
  uint32_t n_merges;
  if (!r.u32(&n_merges, "merge count", 0)) return Error::InvalidProgram;
  if (n_merges > r.left() / 4) {
    TERN_LOG_ERROR("%s: %u merges, but the %zu bytes left hold at most %zu", kWhere, n_merges, r.left(),
                   r.left() / 4);
    return Error::InvalidProgram;
  }
  std::vector<std::string> merges(n_merges);
  for (uint32_t i = 0; i < n_merges; ++i) {
    std::string_view m;
    if (!r.str(&m, "merge", i)) return Error::InvalidProgram;
    merges[i].assign(m.data(), m.size());
  }
  if (r.left() != 0) {
    TERN_LOG_ERROR("%s: %zu bytes after the last merge (offset %zu)", kWhere, r.left(), r.offset());
    return Error::InvalidProgram;
  }
  TERN_CHECK_OK(index_tokens(texts));
  return index_merges(merges);
}

Error Tokenizer::index_tokens(const std::vector<std::string>& texts) {
  int32_t n = static_cast<int32_t>(texts.size());
  std::unordered_set<std::string> special_texts;
  for (int32_t i = 0; i < n; ++i) {
    id_of_[texts[i]] = i;  // the last of equal texts wins, as in tokenizer.py and llama.cpp
    if ((types_[i] == kControl || types_[i] == kUserDefined) && !texts[i].empty()) special_texts.insert(texts[i]);
  }
  bytes_at_.reserve(n + 1);
  for (int32_t i = 0; i < n; ++i) {
    bytes_at_.push_back(static_cast<uint32_t>(bytes_.size()));
    if (special_texts.count(texts[i])) {
      bytes_ += texts[i];
    } else {
      text_to_bytes(texts[i], &bytes_);
    }
    if (bytes_.size() > UINT32_MAX) {
      TERN_LOG_ERROR("%s: the tokens' bytes exceed 4 GiB", kWhere);
      return Error::InvalidProgram;
    }
  }
  bytes_at_.push_back(static_cast<uint32_t>(bytes_.size()));
  for (uint32_t b = 0; b < 256; ++b) {
    std::string ch;
    append_utf8(kBytes.cp_of[b], &ch);
    byte_id_[b] = token_id(ch);
  }
  for (const std::string& s : special_texts) specials_.push_back({s, id_of_[s]});
  std::sort(specials_.begin(), specials_.end(), [](const Special& a, const Special& b) {
    return a.text.size() != b.text.size() ? a.text.size() > b.text.size() : a.text < b.text;
  });
  special_by_first_.assign(256, {});
  for (uint32_t i = 0; i < specials_.size(); ++i) {
    special_by_first_[static_cast<uint8_t>(specials_[i].text[0])].push_back(i);
  }
  return Error::Ok;
}

Error Tokenizer::index_merges(const std::vector<std::string>& merges) {
  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    size_t space = m.find(' ');
    if (space == std::string::npos) {
      TERN_LOG_ERROR("%s: merge %zu is not two symbols separated by a space", kWhere, r);
      return Error::InvalidProgram;
    }
    std::string_view a(m.data(), space), b(m.data() + space + 1, m.size() - space - 1);
    int32_t ia = token_id(a), ib = token_id(b), iab = token_id(m.substr(0, space) + std::string(b));
    if (ia < 0 || ib < 0 || iab < 0) {
      const char* which = ia < 0 ? "its first symbol" : ib < 0 ? "its second symbol" : "the merged symbol";
      TERN_LOG_ERROR("%s: merge %zu: %s is not a token of the vocabulary", kWhere, r, which);
      return Error::InvalidProgram;
    }
    // the first of equal pairs ranks (tokenizer.py's setdefault)
    merges_.emplace(pair_key(ia, ib), Merge{static_cast<int32_t>(r), iab});
  }
  return Error::Ok;
}

int32_t Tokenizer::token_id(std::string_view text) const {
  auto it = id_of_.find(std::string(text));
  return it == id_of_.end() ? -1 : it->second;
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < types_.size() &&
         (types_[id] == kControl || types_[id] == kUserDefined);
}

Result<std::string_view> Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= types_.size()) {
    TERN_LOG_ERROR("%s: token id %d is outside the vocabulary (0 .. %zu)", kWhere, id, types_.size() - 1);
    return Error::InvalidArgument;
  }
  return std::string_view(bytes_.data() + bytes_at_[id], bytes_at_[id + 1] - bytes_at_[id]);
}

Result<std::string> Tokenizer::decode(Span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    TERN_ASSIGN_OR_RETURN(std::string_view b, token_bytes(id));
    out.append(b.data(), b.size());
  }
  return out;
}

// The length of the special token's text at text[at] (the longest that
// matches), or 0; *id its token.
size_t Tokenizer::match_special(std::string_view text, size_t at) const {
  for (uint32_t i : special_by_first_[static_cast<uint8_t>(text[at])]) {
    const std::string& s = specials_[i].text;
    if (s.size() <= text.size() - at && std::memcmp(text.data() + at, s.data(), s.size()) == 0) return i + 1;
  }
  return 0;
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool special) const {
  std::vector<int32_t> ids;
  std::vector<Piece> pieces;
  auto encode_span = [&](size_t begin, size_t end) -> Error {
    pieces.clear();
    std::string_view span = text.substr(begin, end - begin);
    pre_tokenize(pre_, span, &pieces);
    for (const Piece& p : pieces) TERN_CHECK_OK(bpe(span.substr(p.begin, p.end - p.begin), &ids));
    return Error::Ok;
  };
  size_t start = 0;
  if (special && !specials_.empty()) {
    for (size_t i = 0; i < text.size();) {
      size_t hit = match_special(text, i);
      if (hit == 0) {
        ++i;
        continue;
      }
      TERN_CHECK_OK(encode_span(start, i));
      const Special& s = specials_[hit - 1];
      ids.push_back(s.id);
      i += s.text.size();
      start = i;
    }
  }
  TERN_CHECK_OK(encode_span(start, text.size()));
  return ids;
}

// Merges one piece: a list of symbols (initially its bytes), a queue of the
// adjacent pairs that have a merge, by (rank, position); entries made stale
// by an earlier merge are skipped when they come up.
Error Tokenizer::bpe(std::string_view piece, std::vector<int32_t>* out) const {
  struct Sym {
    int32_t id;  // -1 once merged into its left neighbour
    int32_t prev, next;
  };
  struct Cand {
    int32_t rank, left, right, left_id, right_id, result;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  int32_t n = static_cast<int32_t>(piece.size());
  std::vector<Sym> syms(n);
  for (int32_t i = 0; i < n; ++i) {
    uint8_t b = static_cast<uint8_t>(piece[i]);
    if (byte_id_[b] < 0) {
      TERN_LOG_ERROR("%s: byte 0x%02x has no token in the vocabulary", kWhere, b);
      return Error::InvalidArgument;
    }
    syms[i] = {byte_id_[b], i - 1, i + 1 < n ? i + 1 : -1};
  }
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
  auto consider = [&](int32_t l, int32_t r) {
    auto it = merges_.find(pair_key(syms[l].id, syms[r].id));
    if (it != merges_.end()) queue.push({it->second.rank, l, r, syms[l].id, syms[r].id, it->second.result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!queue.empty()) {
    Cand c = queue.top();
    queue.pop();
    Sym& l = syms[c.left];
    Sym& r = syms[c.right];
    if (l.id != c.left_id || r.id != c.right_id || l.next != c.right) continue;  // stale
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    r.id = -1;
    if (l.prev >= 0) consider(l.prev, c.left);
    if (l.next >= 0) consider(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = syms[i].next) out->push_back(syms[i].id);
  return Error::Ok;
}

}  // namespace tern::llm
