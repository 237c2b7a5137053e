// tern-llm-tokenize: the C++ tokenizer of a .tern language model, from the
// command line (and for tests that compare it with python/tern/llm).
//
//   echo -n "Hello world" | tern-llm-tokenize model.tern            # ids, space-separated
//   echo 9906 1917 | tern-llm-tokenize model.tern --decode         # the bytes of the ids
//   tern-llm-tokenize --blob tok.bin --batch < texts.hex            # one hex text per line -> ids per line
//   tern-llm-tokenize --blob tok.bin --decode --batch < ids.txt     # ids per line -> hex bytes per line
//   tern-llm-tokenize model.tern --info                             # vocabulary size, merges
//   tern-llm-tokenize model.tern --chat < messages.txt              # the chat prompt of the messages
//
// The tokenizer is the file's "tern.llm.tokenizer" metadata, or with --blob
// a file holding such a blob. --chat reads the file's "tern.llm.config" (or
// with --config a file holding such text) and prints the prompt its chat
// format builds (extension/llm/chat.h) from the messages on stdin, one per
// line: role, a tab, the content's UTF-8 bytes in hex; --no-generation-prompt
// leaves the generation prompt out. --no-special encodes special tokens' texts as
// plain text. In --batch mode a line that fails prints "error: <message>".
// Exit status: 0 done, 1 the tokenizer or an input was refused, 2 bad usage.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "extension/data_loaders.h"
#include "extension/llm/chat.h"
#include "extension/llm/tokenizer.h"
#include "runtime/executor/program.h"

namespace {

struct Options {
  const char* model = nullptr;
  const char* blob = nullptr;
  const char* config = nullptr;
  bool decode = false, batch = false, special = true, info = false, chat = false, generation_prompt = true;
};

int usage() {
  fprintf(stderr,
          "usage: tern-llm-tokenize (MODEL.tern | --blob FILE) [--decode] [--batch] [--no-special] [--info]\n"
          "       tern-llm-tokenize (MODEL.tern | --config FILE) --chat [--no-generation-prompt]\n");
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

bool read_file(const char* path, std::string* out) {
  FILE* f = fopen(path, "rb");
  bool ok = f != nullptr && read_all(f, out);
  if (f) fclose(f);
  if (!ok) fprintf(stderr, "tern-llm-tokenize: cannot read %s\n", path);
  return ok;
}

// Metadata `key`: the file at `path` if given, else the model's entry.
int load_meta(const Options& o, const char* path, const char* key, std::string* out) {
  if (path != nullptr) return read_file(path, out) ? 0 : 1;
  tern::FileDataLoader loader;
  if (loader.open(o.model) != tern::Error::Ok) return fail(o.model);
  auto program = tern::Program::load(loader);
  if (!program.ok()) return fail(o.model);
  auto meta = program->metadata(key);
  if (!meta.ok()) return fail(o.model);
  out->assign(reinterpret_cast<const char*>(meta->data()), meta->size());
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

// The chat prompt of the messages in `input` ("role<TAB>hex" lines).
int run_chat(const Options& o, const std::string& input) {
  std::string text;
  if (int rc = load_meta(o, o.config, "tern.llm.config", &text)) return rc;
  auto config = tern::llm::LlmConfig::parse({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  if (!config.ok()) return fail("tern.llm.config");
  if (!config->has_chat) {
    fprintf(stderr, "tern-llm-tokenize: the config has no chat format\n");
    return 1;
  }
  std::vector<tern::llm::ChatMessage> messages;
  size_t at = 0;
  while (at < input.size()) {
    size_t nl = input.find('\n', at);
    if (nl == std::string::npos) nl = input.size();
    std::string line = input.substr(at, nl - at);
    at = nl + 1;
    size_t tab = line.find('\t');
    tern::llm::ChatMessage m;
    if (tab == std::string::npos || !from_hex(line.substr(tab + 1), &m.content)) {
      fprintf(stderr, "tern-llm-tokenize: a message line is not role<TAB>hex\n");
      return 2;
    }
    m.role = line.substr(0, tab);
    messages.push_back(std::move(m));
  }
  auto prompt = config->chat.build_prompt({messages.data(), messages.size()}, o.generation_prompt);
  if (!prompt.ok()) return fail("chat");
  fwrite(prompt->data(), 1, prompt->size(), stdout);
  return 0;
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
    } else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
      o.config = argv[++i];
    } else if (!strcmp(argv[i], "--chat")) {
      o.chat = true;
    } else if (!strcmp(argv[i], "--no-generation-prompt")) {
      o.generation_prompt = false;
    } else if (argv[i][0] != '-' && o.model == nullptr) {
      o.model = argv[i];
    } else {
      return usage();
    }
  }
  std::string input, blob;
  if (o.chat) {
    if ((o.model == nullptr) == (o.config == nullptr)) return usage();
    if (!read_all(stdin, &input)) return fail("stdin");
    return run_chat(o, input);
  }
  if ((o.model == nullptr) == (o.blob == nullptr)) return usage();
  if (int rc = load_meta(o, o.blob, "tern.llm.tokenizer", &blob)) return rc;
  auto tok = tern::llm::Tokenizer::load({reinterpret_cast<const uint8_t*>(blob.data()), blob.size()});
  if (!tok.ok()) return fail(o.blob ? o.blob : o.model);
  if (o.info) {
    printf("tokens %zu\nmerges %zu\n", tok->vocab_size(), tok->num_merges());
    return 0;
  }
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
