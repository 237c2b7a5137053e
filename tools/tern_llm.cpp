// tern-llm: generate text with a language model's .tern file (tern.llm.export).
//
//   tern-llm smollm2.tern --prompt "The capital of France is" --max-tokens 32
//   tern-llm smollm2.tern --chat --prompt "What is a lighthouse?"
//   tern-llm smollm2.tern --chat --interactive          # a conversation, one user line at a time
//   tern-llm smollm2.tern --prompt-ids 1,504,3458 --temperature 0 --ignore-eos --json   # benchmarks
//
// Tokens are printed as they come (never cut inside a UTF-8 character), then
// one line on stderr: the prompt's tokens per second (prefill), the generated
// tokens per second (decode: each token's step), load time, load to first
// token, and the process's peak memory. --json prints instead one JSON
// object on stdout with the same figures, each decode step's time, the
// prompt's ids and the generated ids. --interactive reads one user message
// a line and answers each on its own line, the conversation kept in the
// model's cache (only the new turn's tokens are fed).
//
// Sampling defaults are the file's (tern.llm.config); --temperature 0 is
// greedy. Exit status: 0 done, 1 the file or a prompt was refused (the
// message says why), 2 bad usage.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/llm/generator.h"
#include "extension/llm/unicode.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace {

struct Options {
  const char* model = nullptr;
  const char* prompt = nullptr;
  const char* prompt_ids = nullptr;
  const char* system = nullptr;
  bool chat = false, interactive = false, json = false, ignore_eos = false;
  int max_tokens = 128, threads = 0;
  float temperature = -1, top_p = -1, repeat_penalty = -1;
  int top_k = -2;
  unsigned long long seed = 0;
};

int usage() {
  fprintf(stderr,
          "usage: tern-llm MODEL.tern (--prompt TEXT | --prompt-ids ID,ID,... | --interactive) [--chat] [--system TEXT]\n"
          "                [--max-tokens N] [--threads N] [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
          "                [--repeat-penalty R] [--ignore-eos] [--json]\n");
  return 2;
}

bool parse_int(const char* s, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_float(const char* s, float* out) {
  char* end = nullptr;
  *out = strtof(s, &end);
  return end != s && *end == '\0';
}

int parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    long long n = 0;
    const char* v = nullptr;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return -1;
    } else if (!strcmp(a, "--chat")) {
      o->chat = true;
    } else if (!strcmp(a, "--interactive")) {
      o->interactive = true;
    } else if (!strcmp(a, "--json")) {
      o->json = true;
    } else if (!strcmp(a, "--ignore-eos")) {
      o->ignore_eos = true;
    } else if (!strcmp(a, "--prompt") && (v = value())) {
      o->prompt = v;
    } else if (!strcmp(a, "--prompt-ids") && (v = value())) {
      o->prompt_ids = v;
    } else if (!strcmp(a, "--system") && (v = value())) {
      o->system = v;
    } else if (!strcmp(a, "--max-tokens") && (v = value()) && parse_int(v, 1, 1 << 24, &n)) {
      o->max_tokens = static_cast<int>(n);
    } else if (!strcmp(a, "--threads") && (v = value()) && parse_int(v, 1, 256, &n)) {
      o->threads = static_cast<int>(n);
    } else if (!strcmp(a, "--top-k") && (v = value()) && parse_int(v, 0, 1 << 30, &n)) {
      o->top_k = static_cast<int>(n);
    } else if (!strcmp(a, "--seed") && (v = value()) && parse_int(v, 0, INT64_MAX, &n)) {
      o->seed = static_cast<unsigned long long>(n);
    } else if (!strcmp(a, "--temperature") && (v = value()) && parse_float(v, &o->temperature)) {
    } else if (!strcmp(a, "--top-p") && (v = value()) && parse_float(v, &o->top_p)) {
    } else if (!strcmp(a, "--repeat-penalty") && (v = value()) && parse_float(v, &o->repeat_penalty)) {
    } else if (a[0] != '-' && o->model == nullptr) {
      o->model = a;
    } else {
      fprintf(stderr, "tern-llm: bad or incomplete argument '%s'\n", a);
      return usage();
    }
  }
  const int sources = (o->prompt != nullptr) + (o->prompt_ids != nullptr) + o->interactive;
  if (o->model == nullptr || sources != 1) return usage();
  if (o->prompt_ids && o->chat) {
    fprintf(stderr, "tern-llm: --prompt-ids are given as ids; --chat applies to --prompt or --interactive\n");
    return 2;
  }
  return 0;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The process's peak resident memory: /proc/self/status VmHWM on Linux (the
// high-water mark of this program's own memory: getrusage's ru_maxrss keeps
// the parent's peak across fork and exec), else getrusage.
double peak_rss_mb() {
  if (FILE* f = fopen("/proc/self/status", "r")) {
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof(line), f)) {
      if (strncmp(line, "VmHWM:", 6) == 0) kb = strtod(line + 6, nullptr);
    }
    fclose(f);
    if (kb >= 0) return kb / 1024.0;
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // Linux: kilobytes
}

int fail(const char* what) {
  fprintf(stderr, "tern-llm: %s: %s\n", what, tern::last_error_message());
  return 1;
}

bool parse_ids(const char* s, std::vector<int32_t>* out) {
  std::string text(s);
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    long long v = 0;
    if (!parse_int(item.c_str(), 0, INT32_MAX, &v)) {
      fprintf(stderr, "tern-llm: --prompt-ids: '%s' is not a token id\n", item.c_str());
      return false;
    }
    out->push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return true;
}

// One generation: prints the tokens as they come (unless json), returns the ids.
// *first_at: when the first token came (now_ms()).
int generate(tern::llm::Generator& g, const std::vector<int32_t>& prompt, const tern::llm::GenerateOptions& options,
             bool quiet, std::vector<int32_t>* out, bool* stopped, double* first_at) {
  if (g.start({prompt.data(), prompt.size()}, options) != tern::Error::Ok) return fail("the prompt");
  tern::llm::Utf8Stream stream;
  *stopped = false;
  while (true) {
    int32_t id = -1;
    tern::Result<bool> more = g.next(&id);
    if (!more.ok()) return fail("generation");
    if (!*more) {
      *stopped = id >= 0;  // a stop token
      break;
    }
    if (out->empty()) *first_at = now_ms();
    out->push_back(id);
    if (!quiet) {
      tern::Result<std::string_view> bytes = g.tokenizer().token_bytes(id);
      if (bytes.ok()) fputs(stream.push(*bytes).c_str(), stdout);
      fflush(stdout);
    }
  }
  if (!quiet) fputs(stream.flush().c_str(), stdout);
  return 0;
}

// first_token_ms: from the start of the load (one prompt), or of the turn
// (a conversation's turns: the load came before the first).
void print_stats(const tern::llm::GenerateStats& s, double first_token_ms, bool from_load) {
  fprintf(stderr,
          "\nprompt %d tokens: %.1f tokens/s; generated %d tokens: %.1f tokens/s; load %.1f ms; %s to first token "
          "%.1f ms; peak memory %.1f MB\n",
          s.prompt_tokens, s.prefill_tokens_per_s(), s.generated, s.decode_tokens_per_s(), s.load_ms,
          from_load ? "load" : "turn", first_token_ms, peak_rss_mb());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_args(argc, argv, &o)) return rc < 0 ? 0 : rc;
  const double rss_before = peak_rss_mb();
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    return fail("registering the kernels");
  }
  const double t0 = now_ms();
  tern::llm::Generator g;
  if (g.load(o.model, {o.threads}) != tern::Error::Ok) return fail(o.model);
  tern::llm::GenerateOptions options = g.defaults();
  options.max_tokens = o.max_tokens;
  options.stop_at_stop_tokens = !o.ignore_eos;
  if (o.temperature >= 0) options.sampling.temperature = o.temperature;
  if (o.top_k >= 0) options.sampling.top_k = o.top_k;
  if (o.top_p >= 0) options.sampling.top_p = o.top_p;
  if (o.repeat_penalty >= 0) options.repeat_penalty = o.repeat_penalty;
  options.sampling.seed = o.seed;

  if (o.interactive) {
    if (!o.chat) {
      fprintf(stderr, "tern-llm: --interactive is a conversation: give --chat too\n");
      return 2;
    }
    std::vector<tern::llm::ChatMessage> first;
    if (o.system) first.push_back({"system", o.system});
    bool ended_turn = false;
    std::string line;
    char buf[4096];
    fprintf(stderr, "> ");
    while (fgets(buf, sizeof(buf), stdin)) {
      line.assign(buf);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (line.empty()) {
        fprintf(stderr, "> ");
        continue;
      }
      const bool opening = g.runner().position() == 0;
      if (opening) first.push_back({"user", line});
      tern::Result<std::vector<int32_t>> ids = opening ? g.chat_prompt(first) : g.chat_turn(line, ended_turn);
      if (!ids.ok()) return fail("the prompt");
      std::vector<int32_t> out;
      bool stopped = false;
      double first_at = 0;
      if (int rc = generate(g, *ids, options, false, &out, &stopped, &first_at)) return rc;
      ended_turn = stopped;
      fputc('\n', stdout);
      fflush(stdout);
      print_stats(g.stats(), g.stats().first_token_ms, false);
      fprintf(stderr, "> ");
    }
    return 0;
  }

  std::vector<int32_t> prompt;
  if (o.prompt_ids) {
    if (!parse_ids(o.prompt_ids, &prompt)) return 2;
  } else {
    std::vector<tern::llm::ChatMessage> messages;
    if (o.system) messages.push_back({"system", o.system});
    messages.push_back({"user", o.prompt});
    tern::Result<std::vector<int32_t>> ids = o.chat ? g.chat_prompt(messages) : g.text_prompt(o.prompt);
    if (!ids.ok()) return fail("the prompt");
    prompt = std::move(*ids);
  }
  std::vector<int32_t> out;
  bool stopped = false;
  double first_at = t0;
  if (int rc = generate(g, prompt, options, o.json, &out, &stopped, &first_at)) return rc;
  const tern::llm::GenerateStats& s = g.stats();
  const double first_token_ms = first_at - t0;  // from the start of the load
  if (!o.json) {
    print_stats(s, first_token_ms, true);
    return 0;
  }
  printf("{\"prompt_tokens\": %d, \"generated\": %d, \"load_ms\": %.3f, \"prefill_ms\": %.3f, \"first_token_ms\": %.3f, "
         "\"decode_ms\": [",
         s.prompt_tokens, s.generated, s.load_ms, s.prefill_ms, first_token_ms);
  for (size_t i = 0; i < s.step_ms.size(); ++i) printf("%s%.4f", i ? ", " : "", s.step_ms[i]);
  printf("], \"rss_before_mb\": %.2f, \"peak_rss_mb\": %.2f, \"stopped\": %s, \"prompt\": [", rss_before,
         peak_rss_mb(), stopped ? "true" : "false");
  for (size_t i = 0; i < prompt.size(); ++i) printf("%s%d", i ? ", " : "", prompt[i]);
  printf("], \"tokens\": [");
  for (size_t i = 0; i < out.size(); ++i) printf("%s%d", i ? ", " : "", out[i]);
  printf("]}\n");
  return 0;
}
