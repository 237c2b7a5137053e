// Voice activity detection (issue 25): Silero VAD v6 on a 16 kHz WAV file.
//
//   build/examples/vad WAV [--model PATH] [--time] [--probs] [--probs-in FILE]
//
// Reads WAV (16 kHz, mono, 16-bit PCM; another rate or format is refused
// with what it is), runs the model as a stream of 32 ms chunks of 512
// samples, the last one padded with zeros, with its state (the LSTM's h and
// c, the 64 context samples) kept in the loaded method between calls, and
// turns the probabilities into speech segments as the package's
// get_speech_timestamps does (silero-vad 6.2.3, utils_vad.py, with its
// default max_speech_duration_s = inf). Prints one segment a line:
//
//   start<TAB>end           (seconds, 3 decimals)
//
// The sizes and thresholds come from the file's "vad.settings" metadata
// (examples/vad/convert.py). --model defaults to out/vad.tern. --probs
// prints each chunk's probability instead; --probs-in takes the chunks'
// probabilities from FILE (one a line) instead of the model, the WAV giving
// only the length (both for the tests). --time prints to
// stderr the microseconds of one chunk (model call only; the median of 5
// runs over the file) and the real-time factor (that time / 32 ms). Errors go
// to stderr, exit status 1.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "examples/common/wav_io.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace {

// vad.settings: get_speech_timestamps' parameters and the model's sizes.
struct Settings {
  int sample_rate = 0, chunk = 0, context = 0;
  double threshold = 0.5, neg_threshold = 0.35;
  double min_speech_duration_ms = 250, min_silence_duration_ms = 100, speech_pad_ms = 30;
};

struct Segment {
  int64_t start, end;  // samples
};

bool fail(const std::string& what) {
  fprintf(stderr, "vad: %s\n", what.c_str());
  return false;
}


// ---- settings ---------------------------------------------------------------

bool read_settings(const tern::Module& module, Settings* s) {
  tern::Result<tern::Span<const uint8_t>> text = module.metadata("vad.settings");
  if (!text.ok()) return fail(std::string("no vad.settings metadata: ") + tern::last_error_message());
  std::string all(reinterpret_cast<const char*>(text->data()), text->size()), line;
  for (size_t pos = 0; pos < all.size(); pos += line.size() + 1) {
    line = all.substr(pos, all.find('\n', pos) - pos);
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const double v = atof(line.c_str() + eq + 1);
    if (key == "sample_rate") s->sample_rate = int(v);
    else if (key == "chunk") s->chunk = int(v);
    else if (key == "context") s->context = int(v);
    else if (key == "threshold") s->threshold = v;
    else if (key == "neg_threshold") s->neg_threshold = v;
    else if (key == "min_speech_duration_ms") s->min_speech_duration_ms = v;
    else if (key == "min_silence_duration_ms") s->min_silence_duration_ms = v;
    else if (key == "speech_pad_ms") s->speech_pad_ms = v;
  }
  if (s->sample_rate <= 0 || s->chunk <= 0) return fail("vad.settings lacks sample_rate or chunk");
  return true;
}

// ---- model ------------------------------------------------------------------

// One probability per chunk, the state reset first (as get_speech_timestamps
// does). *us: microseconds spent in the model calls.
bool run_model(tern::Module& module, const Settings& s, const std::vector<float>& audio,
               std::vector<float>* probs, double* us) {
  tern::Method* method = module.method();
  if (method == nullptr) return fail(std::string("no forward method: ") + tern::last_error_message());
  method->reset_state();
  probs->clear();
  std::vector<float> chunk(size_t(s.chunk));
  tern::Tensor input = tern::make_tensor(chunk.data(), tern::ScalarType::Float32, {1, s.chunk});
  double total = 0;
  for (size_t start = 0; start < audio.size(); start += size_t(s.chunk)) {
    const size_t n = std::min(size_t(s.chunk), audio.size() - start);
    std::copy(audio.begin() + start, audio.begin() + start + n, chunk.begin());
    std::fill(chunk.begin() + n, chunk.end(), 0.0f);
    const auto t0 = std::chrono::steady_clock::now();
    auto out = module.forward({&input, 1});
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (!out.ok()) return fail(std::string("forward failed: ") + tern::last_error_message());
    probs->push_back((*out)[0].data_as<const float>()[0]);
  }
  *us = total;
  return true;
}

// ---- segments: get_speech_timestamps_from_probs (max_speech_duration_s = inf)

std::vector<Segment> speech_segments(const std::vector<float>& probs, const Settings& s, int64_t length) {
  const double rate = s.sample_rate;
  const double min_speech = rate * s.min_speech_duration_ms / 1000;
  const double min_silence = rate * s.min_silence_duration_ms / 1000;
  const double pad = rate * s.speech_pad_ms / 1000;
  std::vector<Segment> speeches;
  bool triggered = false;
  int64_t start = 0, temp_end = 0;  // temp_end 0: none (as in the package)
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = probs[i];
    const int64_t cur = int64_t(i) * s.chunk;
    if (p >= s.threshold && temp_end) temp_end = 0;
    if (p >= s.threshold && !triggered) {
      triggered = true;
      start = cur;
      continue;
    }
    if (p < s.neg_threshold && triggered) {
      if (!temp_end) temp_end = cur;
      if (double(cur - temp_end) < min_silence) continue;
      if (double(temp_end - start) > min_speech) speeches.push_back({start, temp_end});
      temp_end = 0;
      triggered = false;
    }
  }
  if (triggered && double(length - start) > min_speech) speeches.push_back({start, length});
  // Pad each segment by speech_pad_ms, or split a shorter gap between two in half.
  for (size_t i = 0; i < speeches.size(); ++i) {
    Segment& sp = speeches[i];
    if (i == 0) sp.start = int64_t(std::max(0.0, double(sp.start) - pad));
    if (i + 1 < speeches.size()) {
      Segment& next = speeches[i + 1];
      const int64_t silence = next.start - sp.end;
      if (double(silence) < 2 * pad) {
        sp.end += silence / 2;
        next.start = std::max<int64_t>(0, next.start - silence / 2);
      } else {
        sp.end = int64_t(std::min(double(length), double(sp.end) + pad));
        next.start = int64_t(std::max(0.0, double(next.start) - pad));
      }
    } else {
      sp.end = int64_t(std::min(double(length), double(sp.end) + pad));
    }
  }
  return speeches;
}

struct Options {
  const char* wav = nullptr;
  const char* model = "out/vad.tern";
  const char* probs_in = nullptr;
  bool time = false, probs = false;
};

bool read_probs(const char* path, std::vector<float>* probs) {
  FILE* f = fopen(path, "r");
  if (f == nullptr) return fail(std::string(path) + ": " + strerror(errno));
  float p;
  while (fscanf(f, "%f", &p) == 1) probs->push_back(p);
  fclose(f);
  return true;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) o->model = argv[++i];
    else if (a == "--time") o->time = true;
    else if (a == "--probs") o->probs = true;
    else if (a == "--probs-in" && i + 1 < argc) o->probs_in = argv[++i];
    else if (a[0] != '-' && o->wav == nullptr) o->wav = argv[i];
    else return false;
  }
  return o->wav != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) {
    fprintf(stderr, "usage: %s WAV [--model out/vad.tern] [--time] [--probs] [--probs-in FILE]\n", argv[0]);
    return 1;
  }
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    fprintf(stderr, "vad: %s\n", tern::last_error_message());
    return 1;
  }
  tern::Module module;
  if (module.load(opt.model, {tern::Module::LoadMode::Mmap, 1}) != tern::Error::Ok) {
    fprintf(stderr, "vad: %s: %s\n", opt.model, tern::last_error_message());
    return 1;
  }
  Settings s;
  std::vector<float> audio, probs;
  double us = 0;
  if (!read_settings(module, &s) || !wav_io::read("vad", opt.wav, s.sample_rate, &audio)) return 1;
  if (opt.probs_in ? !read_probs(opt.probs_in, &probs) : !run_model(module, s, audio, &probs, &us)) return 1;
  if (opt.probs) {
    for (float p : probs) printf("%.7f\n", p);
  } else {
    for (const Segment& seg : speech_segments(probs, s, int64_t(audio.size())))
      printf("%.3f\t%.3f\n", double(seg.start) / s.sample_rate, double(seg.end) / s.sample_rate);
  }
  if (opt.time && !probs.empty()) {
    std::vector<double> rounds;
    for (int r = 0; r < 5; ++r) {
      if (!run_model(module, s, audio, &probs, &us)) return 1;
      rounds.push_back(us / double(probs.size()));
    }
    std::sort(rounds.begin(), rounds.end());
    const double chunk_us = 1e6 * s.chunk / s.sample_rate;
    fprintf(stderr, "vad: %.1f us per chunk (median of 5 runs of %zu chunks), real-time factor %.5f\n",
            rounds[2], probs.size(), rounds[2] / chunk_us);
  }
  return 0;
}
