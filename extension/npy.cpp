#include "extension/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#include "runtime/core/log.h"
#include "runtime/core/overflow.h"

namespace tern {
namespace {

struct DescrName {
  const char* descr;
  ScalarType dtype;
};
const DescrName kDescrs[] = {
    {"<f4", ScalarType::Float32}, {"<f8", ScalarType::Float64}, {"<i8", ScalarType::Int64},
    {"<i4", ScalarType::Int32},   {"<i2", ScalarType::Int16},   {"|i1", ScalarType::Int8},
    {"|u1", ScalarType::UInt8},   {"|b1", ScalarType::Bool},    {"<f2", ScalarType::Float16},
};

const char* const kKeys[] = {"descr", "fortran_order", "shape"};

// Logs "'name': <what>" and returns InvalidArgument: every refusal of a
// malformed file.
__attribute__((format(printf, 2, 3))) Error refuse(const char* name, const char* fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  TERN_LOG_ERROR("'%s': %s", name, what);
  return Error::InvalidArgument;
}

std::string shape_str(const std::vector<int64_t>& sizes) {
  std::string s = "(";
  for (size_t d = 0; d < sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

// Where the header sits: [header_offset, data_offset), then the data.
struct Layout {
  size_t header_offset = 0;
  size_t header_len = 0;
  uint64_t data_offset = 0;
};

// The preamble: "\x93NUMPY", major and minor version, then the header length
// (2 bytes little-endian in version 1.0, 4 in 2.0 and 3.0). `p` holds the
// first `n` bytes of a file of `file_size` bytes (n = min(file_size, 12)).
Error read_preamble(const uint8_t* p, size_t n, uint64_t file_size, const char* name, Layout* out) {
  if (n < 8 || memcmp(p, "\x93NUMPY", 6) != 0) {
    return refuse(name, "not a .npy file (it does not start with \\x93NUMPY and a version)");
  }
  if (p[6] < 1 || p[6] > 3 || p[7] != 0) {
    return refuse(name, "format version %u.%u, expected 1.0, 2.0 or 3.0", p[6], p[7]);
  }
  const size_t len_bytes = p[6] == 1 ? 2 : 4;
  const size_t offset = 8 + len_bytes;
  if (n < offset) return refuse(name, "not a .npy file (it ends inside its %zu-byte preamble)", offset);
  uint64_t len = 0;
  for (size_t i = 0; i < len_bytes; ++i) len |= uint64_t(p[8 + i]) << (8 * i);
  if (len > kNpyMaxHeaderBytes) {
    return refuse(name, "header of %llu bytes, at most %zu", (unsigned long long)len, kNpyMaxHeaderBytes);
  }
  if (len > file_size - offset) {
    return refuse(name, "header of %llu bytes runs past the end of the file (%llu bytes after the %zu-byte preamble)",
                  (unsigned long long)len, (unsigned long long)(file_size - offset), offset);
  }
  *out = {offset, static_cast<size_t>(len), offset + len};
  return Error::Ok;
}

// Parses the header, the repr of a Python dict, as numpy writes it:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// then spaces and a '\n'. It reads nothing at or past `end`: in a buffer the
// header is not NUL-terminated.
class HeaderParser {
 public:
  HeaderParser(const char* begin, const char* end, const char* name) : p_(begin), end_(end), name_(name) {}
  Error parse(NpyArray* out);

 private:
  Error parse_entry(bool seen[3], NpyArray* out);
  Error parse_string(const char* what, std::string* s);
  Error parse_descr(ScalarType* dtype);
  Error parse_fortran_order();
  Error parse_shape(std::vector<int64_t>* sizes);
  Error parse_size(size_t d, int64_t* size);

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool at(char c) {
    skip_space();
    return p_ < end_ && *p_ == c;
  }
  bool eat(char c) {
    if (!at(c)) return false;
    ++p_;
    return true;
  }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  const char* found();

  const char* p_;
  const char* end_;
  const char* name_;
  char found_[24];
};

// What is at the cursor, for a message: "'<up to 12 bytes>'" (unprintable
// bytes as '?') or "the end of the header".
const char* HeaderParser::found() {
  if (p_ == end_) return "the end of the header";
  size_t n = 0;
  found_[n++] = '\'';
  for (const char* q = p_; q < end_ && n < 13; ++q) found_[n++] = (*q >= 0x20 && *q < 0x7f) ? *q : '?';
  found_[n++] = '\'';
  found_[n] = '\0';
  return found_;
}

Error HeaderParser::parse(NpyArray* out) {
  if (!eat('{')) return refuse(name_, "header: expected '{' (a dict) at %s", found());
  bool seen[3] = {false, false, false};
  while (!eat('}')) {
    TERN_CHECK_OK(parse_entry(seen, out));
    if (!eat(',') && !at('}')) return refuse(name_, "header: expected ',' or '}' at %s", found());
  }
  skip_space();
  if (p_ != end_) return refuse(name_, "header: %s after the header dict, expected only spaces", found());
  for (int k = 0; k < 3; ++k) {
    if (!seen[k]) return refuse(name_, "header has no '%s' key", kKeys[k]);
  }
  return Error::Ok;
}

Error HeaderParser::parse_entry(bool seen[3], NpyArray* out) {
  std::string key;
  TERN_CHECK_OK(parse_string("a key", &key));
  int k = 0;
  while (k < 3 && key != kKeys[k]) ++k;
  if (k == 3) {
    return refuse(name_, "header: unknown key '%.32s', expected 'descr', 'fortran_order' and 'shape'", key.c_str());
  }
  if (seen[k]) return refuse(name_, "header: '%s' twice", kKeys[k]);
  seen[k] = true;
  if (!eat(':')) return refuse(name_, "header: expected ':' after '%s' at %s", kKeys[k], found());
  switch (k) {
    case 0: return parse_descr(&out->dtype);
    case 1: return parse_fortran_order();
    default: return parse_shape(&out->sizes);
  }
}

// A quoted string of printable ASCII without escapes (all a key or a plain
// descr can hold).
Error HeaderParser::parse_string(const char* what, std::string* s) {
  if (!at('\'') && !at('"')) return refuse(name_, "header: expected %s (a quoted string) at %s", what, found());
  const char quote = *p_++;
  const char* begin = p_;
  for (; p_ < end_ && *p_ != quote; ++p_) {
    if (*p_ < 0x20 || *p_ >= 0x7f || *p_ == '\\') {
      return refuse(name_, "header: byte 0x%02x in %s, expected printable ASCII without escapes",
                    static_cast<unsigned char>(*p_), what);
    }
  }
  if (p_ == end_) return refuse(name_, "header: %s is not closed by %c before the end of the header", what, quote);
  s->assign(begin, p_++);
  return Error::Ok;
}

Error HeaderParser::parse_descr(ScalarType* dtype) {
  if (!at('\'') && !at('"')) {
    return refuse(name_, "'descr' is not a quoted string (found %s): structured dtypes are not supported", found());
  }
  std::string descr;
  TERN_CHECK_OK(parse_string("'descr'", &descr));
  std::string known;
  for (const DescrName& d : kDescrs) {
    if (descr == d.descr) {
      *dtype = d.dtype;
      return Error::Ok;
    }
    known += std::string(known.empty() ? "" : " ") + d.descr;
  }
  return refuse(name_, "descr '%.32s' is not one of %s (little-endian numbers and bool)", descr.c_str(),
                known.c_str());
}

Error HeaderParser::parse_fortran_order() {
  skip_space();
  const char* word = p_;
  while (p_ < end_ && ((*p_ >= 'A' && *p_ <= 'Z') || (*p_ >= 'a' && *p_ <= 'z'))) ++p_;
  const size_t n = static_cast<size_t>(p_ - word);
  if (n == 5 && memcmp(word, "False", 5) == 0) return Error::Ok;
  if (n == 4 && memcmp(word, "True", 4) == 0) {
    return refuse(name_, "Fortran order is not supported, expected C order (save with np.ascontiguousarray)");
  }
  p_ = word;
  return refuse(name_, "header: 'fortran_order' is not True or False (found %s)", found());
}

// A tuple of sizes: "()", "(5,)", "(2, 3)"; also "(5)" and Python 2's "(2L, 3L)".
Error HeaderParser::parse_shape(std::vector<int64_t>* sizes) {
  sizes->clear();
  if (!eat('(')) return refuse(name_, "'shape' is not a tuple such as (2, 3) (found %s)", found());
  while (!eat(')')) {
    int64_t s;
    TERN_CHECK_OK(parse_size(sizes->size(), &s));
    sizes->push_back(s);
    if (!eat(',') && !at(')')) {
      return refuse(name_, "shape: expected ',' or ')' after dim %zu at %s", sizes->size() - 1, found());
    }
  }
  return Error::Ok;
}

Error HeaderParser::parse_size(size_t d, int64_t* size) {
  skip_space();
  const bool negative = p_ < end_ && *p_ == '-';
  if (negative) ++p_;
  if (p_ == end_ || !is_digit(*p_)) {
    return refuse(name_, "shape: expected a size (digits) for dim %zu at %s", d, found());
  }
  uint64_t v = 0;
  for (; p_ < end_ && is_digit(*p_); ++p_) {
    const uint64_t digit = static_cast<uint64_t>(*p_ - '0');
    if (v > (uint64_t(INT64_MAX) - digit) / 10) return refuse(name_, "dim %zu is larger than 2^63 - 1", d);
    v = v * 10 + digit;
  }
  if (p_ < end_ && (*p_ == 'L' || *p_ == 'l')) ++p_;
  if (negative && v != 0) return refuse(name_, "dim %zu is -%llu, expected a size >= 0", d, (unsigned long long)v);
  *size = static_cast<int64_t>(v);
  return Error::Ok;
}

// The array's data bytes, once its rank and sizes are checked: the sizes,
// each 0 taken as 1, span at most kNpyMaxBytes, so that no product of them
// overflows (not even a stride of an empty array).
Error data_bytes(const NpyArray& a, const char* name, uint64_t* nbytes) {
  if (a.sizes.size() > static_cast<size_t>(kMaxDims)) {
    return refuse(name, "shape has %zu dims, at most %d", a.sizes.size(), kMaxDims);
  }
  uint64_t span = scalar_type_size(a.dtype);
  bool empty = false;
  for (int64_t s : a.sizes) {
    if (!checked_mul(span, static_cast<uint64_t>(s == 0 ? 1 : s), &span) || span > kNpyMaxBytes) {
      return refuse(name, "shape %s of %s spans more than 2^48 bytes (each size 0 counted as 1)",
                    shape_str(a.sizes).c_str(), scalar_type_name(a.dtype));
    }
    empty = empty || s == 0;
  }
  *nbytes = empty ? 0 : span;
  return Error::Ok;
}

// Parses the header (`len` bytes at `header`) of a file with `data_avail`
// bytes after it: the dtype and sizes into *a, the data's size into *nbytes.
Error parse_header(const char* header, size_t len, uint64_t data_avail, const char* name, NpyArray* a,
                   uint64_t* nbytes) {
  HeaderParser parser(header, header + len, name);
  TERN_CHECK_OK(parser.parse(a));
  TERN_CHECK_OK(data_bytes(*a, name, nbytes));
  if (*nbytes > data_avail) {
    return refuse(name, "shape %s of %s needs %llu data bytes, the file has %llu after its header",
                  shape_str(a->sizes).c_str(), scalar_type_name(a->dtype), (unsigned long long)*nbytes,
                  (unsigned long long)data_avail);
  }
  return Error::Ok;
}

// The file could be sized but not read: an I/O error, or it shrank since.
Error cannot_read(FILE* f, const char* path, const char* what) {
  TERN_LOG_ERROR("'%s': cannot read %s (%s)", path, what, ferror(f) ? strerror(errno) : "it ended early");
  return Error::AccessFailed;
}

// read_npy on an open file: sized first (fstat), then each part checked
// against what the file holds before anything is allocated for it.
Error read_npy_file(FILE* f, const char* path, NpyArray* out) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    TERN_LOG_ERROR("'%s': not a regular file, its size cannot be known", path);
    return Error::AccessFailed;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint8_t pre[12];
  const size_t n = size < sizeof(pre) ? static_cast<size_t>(size) : sizeof(pre);
  if (fread(pre, 1, n, f) != n) return cannot_read(f, path, "its preamble");
  Layout l;
  TERN_CHECK_OK(read_preamble(pre, n, size, path, &l));
  std::string header(l.header_len, '\0');  // at most kNpyMaxHeaderBytes, and inside the file
  if (fseek(f, static_cast<long>(l.header_offset), SEEK_SET) != 0 ||
      fread(&header[0], 1, l.header_len, f) != l.header_len) {
    return cannot_read(f, path, "its header");
  }
  NpyArray a;
  uint64_t nbytes;
  TERN_CHECK_OK(parse_header(header.data(), header.size(), size - l.data_offset, path, &a, &nbytes));
  if (nbytes > SIZE_MAX) return refuse(path, "%llu data bytes do not fit in memory", (unsigned long long)nbytes);
  a.data.resize(static_cast<size_t>(nbytes));  // at most what the file holds after its header
  if (fread(a.data.data(), 1, nbytes, f) != nbytes) return cannot_read(f, path, "its data");
  *out = std::move(a);
  return Error::Ok;
}

}  // namespace

Tensor NpyArray::tensor() {
  if (sizes.size() > static_cast<size_t>(kMaxDims)) {
    TERN_ABORT("NpyArray with %zu dims, at most %d (read_npy refuses more)", sizes.size(), kMaxDims);
  }
  Tensor t;
  t.data = data.data();
  t.dtype = dtype;
  t.dim = static_cast<int32_t>(sizes.size());
  t.numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    t.sizes[i] = sizes[i];
    t.numel *= sizes[i];
  }
  return t;
}

Error read_npy_buffer(const uint8_t* data, size_t size, const char* name, NpyArray* out) {
  Layout l;
  TERN_CHECK_OK(read_preamble(data, size < 12 ? size : 12, size, name, &l));
  NpyArray a;
  uint64_t nbytes;
  TERN_CHECK_OK(parse_header(reinterpret_cast<const char*>(data + l.header_offset), l.header_len,
                             size - l.data_offset, name, &a, &nbytes));
  const uint8_t* begin = data + l.data_offset;
  a.data.assign(begin, begin + nbytes);
  *out = std::move(a);
  return Error::Ok;
}

Error read_npy(const char* path, NpyArray* out) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    TERN_LOG_ERROR("cannot open '%s': %s", path, strerror(errno));
    return Error::AccessFailed;
  }
  const Error e = read_npy_file(f, path, out);
  fclose(f);
  return e;
}

Error write_npy(const char* path, const Tensor& t) {
  const char* descr = nullptr;
  for (const DescrName& d : kDescrs) {
    if (d.dtype == t.dtype) descr = d.descr;
  }
  if (descr == nullptr) {
    TERN_LOG_ERROR("write_npy('%s'): dtype %s has no .npy name", path, scalar_type_name(t.dtype));
    return Error::InvalidArgument;
  }
  std::string shape;
  for (int i = 0; i < t.dim; ++i) shape += std::to_string(t.sizes[i]) + (t.dim == 1 ? "," : i + 1 < t.dim ? ", " : "");
  std::string h = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');  // data starts 64-byte aligned, as numpy writes
  h += '\n';
  FILE* f = fopen(path, "wb");
  if (!f) {
    TERN_LOG_ERROR("cannot create '%s'", path);
    return Error::AccessFailed;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           static_cast<unsigned char>(h.size() & 0xFF), static_cast<unsigned char>(h.size() >> 8)};
  bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h.data(), 1, h.size(), f) == h.size() &&
            fwrite(t.data, 1, t.nbytes(), f) == t.nbytes();
  ok = fclose(f) == 0 && ok;
  if (!ok) {
    TERN_LOG_ERROR("cannot write '%s'", path);
    return Error::AccessFailed;
  }
  return Error::Ok;
}

}  // namespace tern
