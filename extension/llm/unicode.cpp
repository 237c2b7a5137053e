#include "extension/llm/unicode.h"

namespace tern::llm {
namespace {

struct ClassRange {
  uint32_t first;
  uint32_t last;
  CharClass cls;
};

#include "extension/llm/unicode_tables.inc"

// ASCII is most text: a direct table, built once from the ranges.
struct AsciiClasses {
  CharClass cls[128];
  AsciiClasses() {
    for (uint32_t c = 0; c < 128; ++c) cls[c] = kOther;
    for (const ClassRange& r : kClassRanges) {
      for (uint32_t c = r.first; c <= r.last && c < 128; ++c) cls[c] = r.cls;
    }
  }
};
const AsciiClasses kAscii;

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// The length a lead byte announces (0: not a lead byte), and the range its
// second byte must be in (which excludes overlong forms, surrogates and
// values above U+10FFFF).
int lead_length(uint8_t b, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0) *lo = 0xA0;
    if (b == 0xED) *hi = 0x9F;
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F;
    return 4;
  }
  return 0;
}

}  // namespace

CharClass char_class(uint32_t cp) {
  if (cp < 128) return kAscii.cls[cp];
  size_t lo = 0, hi = kNumClassRanges;
  while (lo < hi) {  // the first range whose last >= cp
    size_t mid = (lo + hi) / 2;
    if (kClassRanges[mid].last < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < kNumClassRanges && kClassRanges[lo].first <= cp ? kClassRanges[lo].cls : kOther;
}

size_t utf8_decode(const uint8_t* s, size_t n, uint32_t* cp) {
  uint8_t b = s[0];
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  uint8_t lo, hi;
  int len = lead_length(b, &lo, &hi);
  if (len == 0 || static_cast<size_t>(len) > n || s[1] < lo || s[1] > hi) {
    *cp = kInvalidBase + b;
    return 1;
  }
  uint32_t v = b & (0x7F >> len);
  for (int i = 1; i < len; ++i) {
    if (!is_continuation(s[i])) {
      *cp = kInvalidBase + b;
      return 1;
    }
    v = (v << 6) | (s[i] & 0x3F);
  }
  *cp = v;
  return static_cast<size_t>(len);
}

size_t utf8_incomplete_tail(const char* s, size_t n) {
  const uint8_t* u = reinterpret_cast<const uint8_t*>(s);
  // the last lead byte among the final three bytes
  size_t back = 1;
  while (back <= 3 && back <= n && is_continuation(u[n - back])) ++back;
  if (back > 3 || back > n) return 0;
  size_t at = n - back;
  uint8_t lo, hi;
  int len = lead_length(u[at], &lo, &hi);
  if (len == 0 || static_cast<size_t>(len) <= back) return 0;  // complete, or not a lead
  if (back >= 2 && (u[at + 1] < lo || u[at + 1] > hi)) return 0;  // can never become valid
  return back;
}

std::string Utf8Stream::push(std::string_view bytes) {
  held_.append(bytes.data(), bytes.size());
  size_t keep = utf8_incomplete_tail(held_.data(), held_.size());
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace tern::llm
