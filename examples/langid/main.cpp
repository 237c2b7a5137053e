// langid: fastText's language identifier (lid.176) on Tern.
//
//   build/examples/langid [--model out/langid.tern] [--threads N] [--time] [--ids] [--digits D] < messages.txt
//
// Reads UTF-8 lines on stdin and prints, for each, the language as fastText
// names it without its "__label__" prefix, a tab, and its probability with
// 4 decimals ("fr\t0.9715"). The .tern file (examples/langid/convert.py)
// holds the model and, as metadata, what fastText's tokenization needs:
//
//   langid.args    "key=value" lines (minn, maxn, word_ngrams, bucket, nwords, ...)
//   langid.words   the vocabulary, one word per line: word i is input row i
//   langid.labels  the labels, one per line, in the model's output order
//   langid.ngrams  the n-gram buckets kept, uint32 little-endian, sorted:
//                  bucket list[k] is input row nwords + k
//
// Per line, as fastText's Dictionary::getLine: split on whitespace, then the
// end-of-line token "</s>"; per word, its row if it is in the vocabulary,
// then the rows of its character n-grams (of "<word>", minn to maxn UTF-8
// code points, hashed with FNV-1a into `bucket` buckets); then the word
// n-grams. The model averages those rows and returns every label's
// probability (a line of more rows than one call takes goes in chunks).
// --time reads every line first, then prints the microseconds of CPU time
// per line (tokenization and model, not I/O) to stderr; --ids prints each line's rows instead of its
// label (for tests); --digits sets the probability's decimals (default 4).
//
// Only the public API: tern::Module (load, metadata, forward) and MethodMeta.
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace {

// fastText's Dictionary::hash: FNV-1a over the bytes taken as signed chars,
// so a byte >= 0x80 is xored in sign-extended (0xFFFFFF80 | b).
uint32_t fnv1a_step(uint32_t h, char c) { return (h ^ static_cast<uint32_t>(static_cast<int8_t>(c))) * 16777619u; }

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = fnv1a_step(h, c);
  return h;
}

bool continues_code_point(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The kept n-gram buckets' rows: an open-addressing hash table (linear
// probing, at most half full) built at load, a lookup or two of the same
// cache line per n-gram; bisecting the sorted list took ~16 dependent loads.
class BucketRows {
 public:
  void build(const std::vector<uint32_t>& sorted) {
    size_t capacity = 16;
    for (shift_ = 60; capacity < 2 * sorted.size(); --shift_) capacity *= 2;
    mask_ = capacity - 1;
    keys_.assign(capacity, kEmpty);
    values_.assign(capacity, 0);
    for (size_t k = 0; k < sorted.size(); ++k) {
      size_t at = slot(sorted[k]);
      while (keys_[at] != kEmpty) at = (at + 1) & mask_;
      keys_[at] = sorted[k];
      values_[at] = static_cast<int32_t>(k);
    }
  }
  // The index of `bucket` in the kept list, or -1.
  int32_t find(uint32_t bucket) const {
    for (size_t at = slot(bucket);; at = (at + 1) & mask_) {
      if (keys_[at] == bucket) return values_[at];
      if (keys_[at] == kEmpty) return -1;
    }
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;  // no bucket: buckets are < 2^31 (bucket count is an int32)
  // Fibonacci hashing: the product's top bits.
  size_t slot(uint32_t bucket) const { return static_cast<size_t>((bucket * 0x9E3779B97F4A7C15ull) >> shift_); }
  size_t mask_ = 0;
  int shift_ = 60;
  std::vector<uint32_t> keys_;
  std::vector<int32_t> values_;
};

// What the file's metadata says; the strings point into the loaded file.
struct Vocabulary {
  int64_t dim = 0, minn = 0, maxn = 0, word_ngrams = 1, bucket = 0, nwords = 0, max_ids = 0;
  std::string_view label_prefix, eos;
  bool all_buckets = false;                  // ngram_table=all: bucket b is row nwords + b
  std::unordered_map<std::string_view, int64_t> words;  // word -> row
  std::vector<std::string_view> labels;      // output i's name, prefix stripped
  BucketRows buckets;                        // kept n-gram bucket -> its index in langid.ngrams
};

std::string_view as_text(tern::Span<const uint8_t> v) {
  return std::string_view(reinterpret_cast<const char*>(v.data()), v.size());
}

// Calls f(line) for each '\n'-separated line of `text`.
template <typename F>
void for_each_line(std::string_view text, F f) {
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    f(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
}

bool read_vocabulary(const tern::Module& module, Vocabulary* v) {
  tern::Result<tern::Span<const uint8_t>> args = module.metadata("langid.args");
  tern::Result<tern::Span<const uint8_t>> words = module.metadata("langid.words");
  tern::Result<tern::Span<const uint8_t>> labels = module.metadata("langid.labels");
  if (!args.ok() || !words.ok() || !labels.ok()) return false;  // logged: which key
  std::string table;
  for_each_line(as_text(*args), [&](std::string_view kv) {
    const size_t eq = kv.find('=');
    const std::string_view key = kv.substr(0, eq), value = eq == kv.npos ? "" : kv.substr(eq + 1);
    const long long n = strtoll(std::string(value).c_str(), nullptr, 10);
    if (key == "dim") v->dim = n;
    if (key == "minn") v->minn = n;
    if (key == "maxn") v->maxn = n;
    if (key == "word_ngrams") v->word_ngrams = n;
    if (key == "bucket") v->bucket = n;
    if (key == "nwords") v->nwords = n;
    if (key == "max_ids") v->max_ids = n;
    if (key == "label_prefix") v->label_prefix = value;
    if (key == "eos") v->eos = value;
    if (key == "ngram_table") table = std::string(value);
  });
  int64_t row = 0;
  for_each_line(as_text(*words), [&](std::string_view w) { v->words.emplace(w, row++); });
  for_each_line(as_text(*labels), [&](std::string_view l) {
    const bool prefixed = !v->label_prefix.empty() && l.substr(0, v->label_prefix.size()) == v->label_prefix;
    v->labels.push_back(prefixed ? l.substr(v->label_prefix.size()) : l);
  });
  v->all_buckets = table == "all";
  if (!v->all_buckets) {
    tern::Result<tern::Span<const uint8_t>> ngrams = module.metadata("langid.ngrams");
    if (!ngrams.ok()) return false;
    std::vector<uint32_t> sorted(ngrams->size() / 4);
    memcpy(sorted.data(), ngrams->data(), sorted.size() * 4);  // little-endian host, any alignment
    v->buckets.build(sorted);
  }
  if (row != v->nwords || v->dim < 1 || v->bucket <= 0 || v->bucket > INT32_MAX || v->eos.empty() || v->max_ids < 1 ||
      table.empty()) {
    fprintf(stderr, "langid: the file's metadata is inconsistent (%lld words for nwords %lld, bucket %lld)\n",
            (long long)row, (long long)v->nwords, (long long)v->bucket);
    return false;
  }
  return true;
}

// The model takes (rows int64 [n], weights float32 [n], base float32 [dim])
// and returns (one probability per label, hidden float32 [dim]).
bool check_model(const tern::Module& module, const Vocabulary& v) {
  tern::Result<tern::MethodMeta> meta = module.program().method_meta("forward");
  if (!meta.ok()) return false;
  const bool shaped = meta->num_inputs() == 3 && meta->num_outputs() == 2;
  tern::Result<tern::TensorInfo> ids = meta->input(0), weights = meta->input(1), base = meta->input(2);
  tern::Result<tern::TensorInfo> probs = meta->output(0), hidden = meta->output(1);
  if (!shaped || !ids.ok() || !weights.ok() || !base.ok() || !probs.ok() || !hidden.ok() ||
      ids->dtype != tern::ScalarType::Int64 || weights->dtype != tern::ScalarType::Float32 ||
      base->dtype != tern::ScalarType::Float32 || probs->dtype != tern::ScalarType::Float32 ||
      hidden->dtype != tern::ScalarType::Float32 || probs->numel() != static_cast<int64_t>(v.labels.size()) ||
      hidden->numel() != base->numel() || base->numel() != v.dim || ids->numel() < v.max_ids) {
    fprintf(stderr, "langid: the model does not take (int64 rows [%lld], float32 weights, float32 base [%lld]) to "
            "(%zu float32 probabilities, float32 hidden)\n", (long long)v.max_ids, (long long)v.dim, v.labels.size());
    return false;
  }
  return true;
}

// A line's input rows, as fastText's Dictionary::getLine makes them. Keeps
// its buffers between lines: no allocation once they have grown.
class Tokenizer {
 public:
  explicit Tokenizer(const Vocabulary& v) : v_(v) {}

  void rows(std::string_view line, std::vector<int64_t>* out) {
    out->clear();
    hashes_.clear();
    size_t i = 0;
    for (;;) {
      while (i < line.size() && is_space(line[i])) ++i;
      size_t j = i;
      while (j < line.size() && !is_space(line[j])) ++j;
      const std::string_view token = i < line.size() ? line.substr(i, j - i) : v_.eos;
      i = j;
      if (!v_.label_prefix.empty() && token.substr(0, v_.label_prefix.size()) == v_.label_prefix) continue;  // a label
      word(token, out);
      if (token == v_.eos) break;  // getLine stops at the first "</s>", even one typed in the line
    }
    word_ngrams(out);
  }

 private:
  // readWord's separators.
  static bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == '\0';
  }

  // Dictionary::pushHash: the row of an n-gram bucket, if the model kept it.
  void push(uint64_t bucket, std::vector<int64_t>* out) const {
    if (v_.all_buckets) {
      out->push_back(v_.nwords + static_cast<int64_t>(bucket));
      return;
    }
    const int32_t k = v_.buckets.find(static_cast<uint32_t>(bucket));
    if (k >= 0) out->push_back(v_.nwords + k);
  }

  void word(std::string_view token, std::vector<int64_t>* out) {
    auto it = v_.words.find(token);
    if (it != v_.words.end()) out->push_back(it->second);
    if (token != v_.eos) subwords(token, out);
    hashes_.push_back(fnv1a(token));
  }

  // The character n-grams of "<token>" of minn to maxn code points; a byte
  // that continues a code point starts none. The hash of each is the hash of
  // the one before it (same start, one code point shorter) carried on.
  void subwords(std::string_view token, std::vector<int64_t>* out) {
    word_.assign(1, '<');
    word_.append(token);
    word_.push_back('>');
    const size_t size = word_.size();
    for (size_t i = 0; i < size; ++i) {
      if (continues_code_point(word_[i])) continue;
      uint32_t h = 2166136261u;
      size_t j = i;
      for (int64_t n = 1; j < size && n <= v_.maxn; ++n) {
        h = fnv1a_step(h, word_[j++]);
        while (j < size && continues_code_point(word_[j])) h = fnv1a_step(h, word_[j++]);
        if (n >= v_.minn && !(n == 1 && (i == 0 || j == size))) push(h % static_cast<uint32_t>(v_.bucket), out);
      }
    }
  }

  // Dictionary::addWordNgrams: the int32 word hashes widened to uint64 with
  // their sign, as fastText reads them from a std::vector<int32_t>.
  void word_ngrams(std::vector<int64_t>* out) const {
    for (size_t i = 0; i < hashes_.size(); ++i) {
      uint64_t h = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(hashes_[i])));
      for (size_t j = i + 1; j < hashes_.size() && j < i + static_cast<size_t>(v_.word_ngrams); ++j) {
        h = h * 116049371u + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(hashes_[j])));
        push(h % static_cast<uint64_t>(v_.bucket), out);
      }
    }
  }

  const Vocabulary& v_;
  std::vector<uint32_t> hashes_;
  std::string word_;
};

// The line's probabilities: the model averages its rows (each weighs 1/n)
// and classifies the mean. One call takes at most max_ids rows; a longer line
// goes in chunks, each adding its rows to the sum the one before it returned
// (the model's input `base` and output `hidden`), the last one classifying.
class Classifier {
 public:
  Classifier(tern::Module& module, size_t max_ids, int64_t dim) : module_(module), max_ids_(max_ids), base_(dim) {}

  // float32 [nlabels], valid until the next call; nullptr on failure (logged).
  const tern::Tensor* run(std::vector<int64_t>& rows) {
    const size_t n = rows.size();
    weights_.assign(std::min(n, max_ids_), 1.0f / static_cast<float>(n));
    std::fill(base_.begin(), base_.end(), 0.0f);
    for (size_t start = 0; start < n; start += max_ids_) {
      const int64_t count = static_cast<int64_t>(std::min(max_ids_, n - start));
      tern::Tensor in[3] = {tern::make_tensor(rows.data() + start, tern::ScalarType::Int64, {count}),
                            tern::make_tensor(weights_.data(), tern::ScalarType::Float32, {count}),
                            tern::make_tensor(base_.data(), tern::ScalarType::Float32, {static_cast<int64_t>(base_.size())})};
      tern::Result<tern::Span<const tern::Tensor>> out = module_.forward({in, 3});
      if (!out.ok()) return nullptr;
      if (start + max_ids_ >= n) return &(*out)[0];
      memcpy(base_.data(), (*out)[1].data, base_.size() * sizeof(float));  // hidden so far
    }
    return nullptr;  // n == 0: not called
  }

 private:
  tern::Module& module_;
  size_t max_ids_;
  std::vector<float> weights_;
  std::vector<float> base_;  // [dim]
};

struct Options {
  const char* model = "out/langid.tern";
  int threads = 1;
  bool time = false;
  bool ids = false;
  int digits = 4;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--model" && i + 1 < argc) {
      o->model = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      o->threads = atoi(argv[++i]);
    } else if (a == "--time") {
      o->time = true;
    } else if (a == "--ids") {
      o->ids = true;
    } else if (a == "--digits" && i + 1 < argc) {
      o->digits = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--model out/langid.tern] [--threads N] [--time] [--ids] [--digits D] < lines\n",
              argv[0]);
      return false;
    }
  }
  return o->threads >= 1 && o->digits >= 0 && o->digits <= 9;
}

// This thread's CPU time: on a shared machine, wall time also counts the
// time other processes had the core (the model runs on this thread alone
// with --threads 1, the default).
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int fail() {
  fprintf(stderr, "langid: %s\n", tern::last_error_message());
  return 1;
}

// One line's answer appended to `out`: "label\tprobability\n" (or its rows,
// with --ids). False on failure (logged).
bool answer(std::string_view line, const Options& opt, const Vocabulary& vocab, Tokenizer& tokenizer,
            Classifier& classifier, std::vector<int64_t>& rows, std::string* out) {
  char text[64];
  tokenizer.rows(line, &rows);
  if (opt.ids) {
    for (size_t i = 0; i < rows.size(); ++i) {
      out->append(text, snprintf(text, sizeof(text), i ? " %lld" : "%lld", (long long)rows[i]));
    }
    out->push_back('\n');
    return true;
  }
  if (rows.empty()) {  // no word known, no n-gram kept (a model without "</s>"): fastText says nothing
    out->append(text, snprintf(text, sizeof(text), "\t%.*f\n", opt.digits, 0.0));
    return true;
  }
  const tern::Tensor* probs = classifier.run(rows);
  if (probs == nullptr) return false;
  const float* p = probs->data_as<float>();  // [nlabels] (check_model)
  const size_t best = static_cast<size_t>(std::max_element(p, p + probs->numel) - p);
  out->append(vocab.labels[best]);
  out->append(text, snprintf(text, sizeof(text), "\t%.*f\n", opt.digits, p[best]));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) return 2;
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    return fail();
  }
  tern::Module module;
  if (module.load(opt.model, {tern::Module::LoadMode::Mmap, opt.threads}) != tern::Error::Ok) return fail();
  Vocabulary vocab;
  if (!read_vocabulary(module, &vocab)) return fail();
  if (!check_model(module, vocab)) return 1;
  Tokenizer tokenizer(vocab);
  Classifier classifier(module, static_cast<size_t>(vocab.max_ids), vocab.dim);
  std::vector<int64_t> rows;
  std::string out;

  char* line = nullptr;
  size_t capacity = 0;
  ssize_t len;
  std::vector<std::string> lines;  // --time: all of them, answered after reading
  while ((len = getline(&line, &capacity, stdin)) >= 0) {
    const std::string_view text(line, static_cast<size_t>(len > 0 && line[len - 1] == '\n' ? len - 1 : len));
    if (opt.time) {
      lines.emplace_back(text);
      continue;
    }
    out.clear();
    if (!answer(text, opt, vocab, tokenizer, classifier, rows, &out)) return fail();
    fwrite(out.data(), 1, out.size(), stdout);
  }
  free(line);
  if (opt.time && !lines.empty()) {
    // Tokenization alone, then the whole answer, each over all the lines: no
    // I/O and no clock read per line inside the timed loops.
    double t0 = cpu_seconds();
    for (const std::string& l : lines) tokenizer.rows(l, &rows);
    const double tokenizing = cpu_seconds() - t0;
    t0 = cpu_seconds();
    for (const std::string& l : lines) {
      if (!answer(l, opt, vocab, tokenizer, classifier, rows, &out)) return fail();
    }
    const double seconds = cpu_seconds() - t0;
    fwrite(out.data(), 1, out.size(), stdout);
    fprintf(stderr, "langid: %zu lines, %.2f us per line (tokenization and model; tokenization %.2f us)\n",
            lines.size(), 1e6 * seconds / lines.size(), 1e6 * tokenizing / lines.size());
  }
  return 0;
}
