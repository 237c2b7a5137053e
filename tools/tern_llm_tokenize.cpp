// tern-llm-tokenize: the C++ tokenizer of a .tern language model, from the
// command line (and for tests that compare it with python/tern/llm).
//
//   echo -n "Hello world" | tern-llm-tokenize model.tern            # ids, space-separated
//   echo 9906 1917 | tern-llm-tokenize model.tern --decode         # the bytes of the ids
//   tern-llm-tokenize --blob tok.bin --batch < texts.hex            # one hex text per line -> ids per line
//   tern-llm-tokenize --blob tok.bin --decode --batch < ids.txt     # ids per line -> hex bytes per line
//   tern-llm-tokenize model.tern --info                             # vocabulary size, merges, pre-tokenizer
//
// The tokenizer is the file's "tern.llm.tokenizer" metadata, or with --blob
// a file holding such a blob. --no-special encodes special tokens' texts as
// plain text. In --batch mode a line that fails prints "error: <message>".
// Exit status: 0 done, 1 the tokenizer or an input was refused, 2 bad usage.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "extension/data_loaders.h"
#include "extension/llm/tokenizer.h"
#include "runtime/executor/program.h"

namespace {

struct Options {
  const char* model = nullptr;
  const char* blob = nullptr;
  bool decode = false, batch = false, special = true, info = false;
};

int usage() {
  fprintf(stderr,
          "usage: tern-llm-tokenize (MODEL.tern | --blob FILE) [--decode] [--batch] [--no-special] [--info]\n");
  return 2;
}

bool read_all(FILE* f, std::string* out) {
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  return !ferror(f);
}

int fail(const char* what) {
  fprintf(stderr, "tern-llm-tokenize: %s: %s\n", what, tern::last_error_message());
  return 1;
}

// The tokenizer blob: the --blob file, or the model's metadata.
int load_blob(const Options& o, std::string* blob) {
  if (o.blob != nullptr) {
    FILE* f = fopen(o.blob, "rb");
    if (f == nullptr || !read_all(f, blob)) {
      fprintf(stderr, "tern-llm-tokenize: cannot read %s\n", o.blob);
      if (f) fclose(f);
      return 1;
    }
    fclose(f);
    return 0;
  }
  tern::FileDataLoader loader;
  if (loader.open(o.model) != tern::Error::Ok) return fail(o.model);
  auto program = tern::Program::load(loader);
  if (!program.ok()) return fail(o.model);
  auto meta = program->metadata("tern.llm.tokenizer");
  if (!meta.ok()) return fail(o.model);
  blob->assign(reinterpret_cast<const char*>(meta->data()), meta->size());
  return 0;
}

bool parse_ids(const std::string& text, std::vector<int32_t>* ids) {
  const char* p = text.c_str();
  while (*p) {
    char* end;
    long v = strtol(p, &end, 10);
    if (end == p) {
      while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
      if (*p == '\0') break;
      return false;
    }
    if (v < INT32_MIN || v > INT32_MAX) return false;
    ids->push_back(static_cast<int32_t>(v));
    p = end;
  }
  return true;
}

bool from_hex(const std::string& hex, std::string* out) {
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  if (hex.size() % 2) return false;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

// One input (text, or ids with --decode) -> one output, or the error line.
bool run_one(const tern::llm::Tokenizer& tok, const Options& o, const std::string& in, std::string* out) {
  if (o.decode) {
    std::vector<int32_t> ids;
    if (!parse_ids(in, &ids)) {
      *out = "not a list of token ids";
      return false;
    }
    auto bytes = tok.decode({ids.data(), ids.size()});
    if (!bytes.ok()) {
      *out = tern::last_error_message();
      return false;
    }
    *out = *bytes;
    return true;
  }
  auto ids = tok.encode(in, o.special);
  if (!ids.ok()) {
    *out = tern::last_error_message();
    return false;
  }
  for (size_t i = 0; i < ids->size(); ++i) *out += (i ? " " : "") + std::to_string((*ids)[i]);
  return true;
}

int run_batch(const tern::llm::Tokenizer& tok, const Options& o, const std::string& input) {
  size_t at = 0;
  int rc = 0;
  while (at < input.size()) {
    size_t nl = input.find('\n', at);
    if (nl == std::string::npos) nl = input.size();
    std::string line = input.substr(at, nl - at), in, out;
    at = nl + 1;
    if (!o.decode && !from_hex(line, &in)) {
      printf("error: not hex\n");
      rc = 1;
      continue;
    }
    if (!run_one(tok, o, o.decode ? line : in, &out)) {
      printf("error: %s\n", out.c_str());
      rc = 1;
      continue;
    }
    if (o.decode) {
      for (unsigned char c : out) printf("%02x", c);
      printf("\n");
    } else {
      printf("%s\n", out.c_str());
    }
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--blob") && i + 1 < argc) {
      o.blob = argv[++i];
    } else if (!strcmp(argv[i], "--decode")) {
      o.decode = true;
    } else if (!strcmp(argv[i], "--batch")) {
      o.batch = true;
    } else if (!strcmp(argv[i], "--no-special")) {
      o.special = false;
    } else if (!strcmp(argv[i], "--info")) {
      o.info = true;
    } else if (argv[i][0] != '-' && o.model == nullptr) {
      o.model = argv[i];
    } else {
      return usage();
    }
  }
  if ((o.model == nullptr) == (o.blob == nullptr)) return usage();
  std::string blob;
  if (int rc = load_blob(o, &blob)) return rc;
  auto tok = tern::llm::Tokenizer::load({reinterpret_cast<const uint8_t*>(blob.data()), blob.size()});
  if (!tok.ok()) return fail(o.blob ? o.blob : o.model);
  if (o.info) {
    printf("tokens %zu\nmerges %zu\n", tok->vocab_size(), tok->num_merges());
    return 0;
  }
  std::string input;
  if (!read_all(stdin, &input)) return fail("stdin");
  if (o.batch) return run_batch(*tok, o, input);
  std::string out;
  if (!run_one(*tok, o, input, &out)) {
    fprintf(stderr, "tern-llm-tokenize: %s\n", out.c_str());
    return 1;
  }
  fwrite(out.data(), 1, out.size(), stdout);
  if (!o.decode) printf("\n");
  return 0;
}
