#include "extension/llm/sampler.h"

#include <algorithm>
#include <cmath>

namespace tern::llm {
namespace {

uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Larger first, lower id first on ties: a total order (NaNs are left out).
bool before(float a_logit, int32_t a_id, float b_logit, int32_t b_id) {
  return a_logit != b_logit ? a_logit > b_logit : a_id < b_id;
}

}  // namespace

Rng::Rng(uint64_t seed) {
  for (uint64_t& s : s_) s = splitmix64(&seed);
}

uint64_t Rng::next() {  // xoshiro256**
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

// exp(x) = 2^k * exp(r), r = x - k ln 2 in [-ln2/2, ln2/2], exp(r) by its
// Taylor series to r^13 (truncation below 1e-17): libm's exp may differ by
// an ulp between platforms, this does not.
double deterministic_exp(double x) {
  if (!(x > -745.2)) return 0.0;  // also -inf (and NaN, which callers never pass)
  if (x >= 0) return 1.0;         // callers pass x <= 0
  const double k = std::floor(x * 1.4426950408889634 + 0.5);
  const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;  // k * ln2_hi is exact
  const double r = (x - k * ln2_hi) - k * ln2_lo;
  double p = 1.0;
  for (int n = 13; n >= 1; --n) p = 1.0 + p * r / n;
  return std::ldexp(p, static_cast<int>(k));
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

int32_t Sampler::argmax(Span<const float> logits) {
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    if (best < 0 || logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best < 0 ? 0 : best;
}

int32_t Sampler::sample(Span<const float> logits) {
  if (options_.temperature <= 0 || options_.top_k == 1) return argmax(logits);
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isnan(logits[i])) candidates_.push_back({logits[i], static_cast<int32_t>(i)});
  }
  if (candidates_.empty()) return 0;
  auto order = [](const Candidate& a, const Candidate& b) { return before(a.logit, a.id, b.logit, b.id); };
  size_t kept = candidates_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < kept) {
    kept = static_cast<size_t>(options_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + kept, candidates_.end(), order);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), order);
  }
  const double t = options_.temperature, top = candidates_[0].logit;
  weights_.resize(kept);
  double total = 0;
  for (size_t i = 0; i < kept; ++i) {
    const double l = candidates_[i].logit;
    weights_[i] = l == top ? 1.0 : deterministic_exp((l - top) / t);
    total += weights_[i];
  }
  if (options_.top_p < 1) {
    const double want = static_cast<double>(options_.top_p) * total;
    double sum = 0;
    size_t n = 0;
    while (n < kept && (n == 0 || sum < want)) sum += weights_[n++];
    kept = n;
    total = sum;
  }
  const double u = rng_.uniform() * total;
  double sum = 0;
  for (size_t i = 0; i < kept; ++i) {
    sum += weights_[i];
    if (sum > u) return candidates_[i].id;
  }
  return candidates_[kept - 1].id;
}

void apply_repeat_penalty(Span<float> logits, Span<const int32_t> recent, float penalty) {
  if (penalty == 1.0f) return;
  // each distinct id once; quadratic in the window (tens of ids), no allocation
  for (size_t i = 0; i < recent.size(); ++i) {
    const int32_t id = recent[i];
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    if (std::find(recent.begin(), recent.begin() + i, id) != recent.begin() + i) continue;
    float& l = logits[id];
    l = l > 0 ? l / penalty : l * penalty;
  }
}

}  // namespace tern::llm
