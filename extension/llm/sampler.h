// Sampler: the next token from a model's logits; greedy, or drawn with
// temperature, top-k and top-p from a seeded generator.
//
//   tern::llm::SamplerOptions o;
//   o.temperature = 0.7f; o.top_k = 40; o.top_p = 0.9f; o.seed = 1234;
//   tern::llm::Sampler sampler(o);
//   int32_t next = sampler.sample({logits, vocab});        // per generated token
//
// The definition (every platform draws the same tokens from the same seed
// and logits: the arithmetic is IEEE double, operation by operation, with
// this file's own exp; sampler.cpp is compiled without fused multiply-add):
//
// 1. Greedy when temperature <= 0 or top_k == 1: the id of the largest logit,
//    the lowest such id on ties. Takes no random number.
// 2. Otherwise the candidates are the ids whose logit is not NaN, ordered by
//    logit, largest first, lower id first on ties. top_k > 0 keeps the first
//    top_k of them.
// 3. Each kept candidate i has the weight w_i = exp((l_i - l_max) / T),
//    computed in double (l_max: the first candidate's logit, T: temperature;
//    w = 1 where l_i == l_max, which covers l_max = +inf).
// 4. top_p < 1 keeps the shortest prefix of candidates whose weights sum to
//    at least top_p times the kept weights' sum (at least one candidate).
// 5. u = uniform() * (sum of the prefix's weights); the token is the first
//    candidate whose running weight sum exceeds u (the last one if rounding
//    leaves none).
// If every logit is NaN, the token is 0.
//
// Rng is xoshiro256** (Blackman and Vigna) with its state filled by
// splitmix64 from the seed; uniform() = (next() >> 11) * 2^-53, in [0, 1).
//
// Thread safety: a Sampler holds its generator's state; one per generation.
// sample() allocates nothing after the first call with a given vocabulary size.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/span.h"

namespace tern::llm {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();

 private:
  uint64_t s_[4];
};

struct SamplerOptions {
  float temperature = 0.8f;  // <= 0: greedy
  int32_t top_k = 40;        // <= 0: no limit
  float top_p = 0.95f;       // >= 1: no limit
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // The next token's id in [0, logits.size()); logits.size() >= 1.
  int32_t sample(Span<const float> logits);

  // Step 1 of the definition alone.
  static int32_t argmax(Span<const float> logits);

  const SamplerOptions& options() const { return options_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };

  SamplerOptions options_;
  Rng rng_;
  std::vector<Candidate> candidates_;
  std::vector<double> weights_;
};

// llama.cpp's repetition penalty, applied to `logits` in place before
// sampling: for each distinct id among `recent` (ids outside the logits are
// ignored), a positive logit is divided by `penalty`, another multiplied by
// it. penalty == 1 changes nothing.
void apply_repeat_penalty(Span<float> logits, Span<const int32_t> recent, float penalty);

// exp(x) for x <= 0 (and -inf -> 0), the same bits on every IEEE platform;
// relative error below 1e-15. Exposed for tests.
double deterministic_exp(double x);

}  // namespace tern::llm
