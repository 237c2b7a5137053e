// extension/llm/sampler.h: greedy and its limits (top-k 1, a tiny top-p, a
// temperature near 0), seeded reproducibility with pinned values (the same
// on every platform), and the distribution of many draws against softmax
// computed here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "compare.h"
#include "extension/llm/sampler.h"

namespace {

using tern::llm::Sampler;
using tern::llm::SamplerOptions;

SamplerOptions opts(float temperature, int32_t top_k, float top_p, uint64_t seed = 7) {
  SamplerOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.seed = seed;
  return o;
}

// Logits of `n` tokens, at least 0.01 apart (so that a near-zero
// temperature leaves one candidate), in a shuffled order.
std::vector<float> spread_logits(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) l[i] = -8.0f + 0.01f * static_cast<float>(i) + 0.004f * (g() % 2);
  std::shuffle(l.begin(), l.end(), g);
  return l;
}

int32_t draw(Sampler& s, const std::vector<float>& l) { return s.sample({l.data(), l.size()}); }

TEST(LlmSampler, GreedyIsTheLowestIdOfTheLargestLogit) {
  std::vector<float> l = {1.0f, 3.0f, NAN, 3.0f, -INFINITY, 2.0f};
  EXPECT_EQ(Sampler::argmax({l.data(), l.size()}), 1);
  Sampler zero(opts(0.0f, 40, 0.9f));
  EXPECT_EQ(draw(zero, l), 1);
  std::vector<float> nan = {NAN, NAN};
  EXPECT_EQ(Sampler::argmax({nan.data(), nan.size()}), 0);
  Sampler sampled(opts(1.0f, 0, 1.0f));
  EXPECT_EQ(draw(sampled, nan), 0);
}

TEST(LlmSampler, TopK1TinyTopPAndNearZeroTemperatureAreGreedy) {
  for (uint32_t trial = 0; trial < 50; ++trial) {
    std::vector<float> l = spread_logits(500, trial);
    int32_t greedy = Sampler::argmax({l.data(), l.size()});
    Sampler k1(opts(1.5f, 1, 1.0f, trial)), p0(opts(1.5f, 0, 1e-9f, trial)), t0(opts(1e-4f, 0, 1.0f, trial));
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(draw(k1, l), greedy);
      ASSERT_EQ(draw(p0, l), greedy);
      ASSERT_EQ(draw(t0, l), greedy);
    }
  }
}

TEST(LlmSampler, TheSameSeedDrawsTheSameTokensEverywhere) {
  std::vector<float> l = spread_logits(1000, 3);
  for (float& x : l) x *= 0.2f;  // a flat distribution: many tokens are likely
  std::vector<int32_t> a, b, c;
  Sampler sa(opts(1.0f, 0, 0.95f, 42)), sb(opts(1.0f, 0, 0.95f, 42)), sc(opts(1.0f, 0, 0.95f, 43));
  for (int i = 0; i < 200; ++i) {
    a.push_back(draw(sa, l));
    b.push_back(draw(sb, l));
    c.push_back(draw(sc, l));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // pinned: xoshiro256** seeded by splitmix64, and the first draws on fixed logits, both
  // computed by a separate Python implementation of sampler.h's definition
  tern::llm::Rng rng(0);
  EXPECT_EQ(rng.next(), 0x99EC5F36CB75F2B4ull);
  EXPECT_EQ(rng.next(), 0xBF6E1F784956452Aull);
  std::vector<float> small = {0.5f, 1.5f, -0.25f, 1.0f, 0.0f, 2.0f, -1.0f, 0.75f};
  Sampler pinned(opts(0.9f, 6, 0.97f, 2024));
  std::vector<int32_t> got;
  for (int i = 0; i < 16; ++i) got.push_back(draw(pinned, small));
  EXPECT_EQ(got, (std::vector<int32_t>{5, 7, 5, 5, 3, 5, 5, 5, 1, 5, 3, 0, 0, 5, 3, 5}));
}

TEST(LlmSampler, DeterministicExpIsExp) {
  std::vector<double> xs, got, want;
  for (double x = -708.0; x <= 0.0; x += 0.37)  // results in the normal range xs.push_back(x);
  xs.push_back(-1e-300);
  xs.push_back(-0.5 * std::log(2.0));
  for (double x : xs) {
    got.push_back(tern::llm::deterministic_exp(x));
    want.push_back(std::exp(x));
  }
  EXPECT_TRUE(tern::test::all_close(got, want, 4e-15, 0.0, "deterministic_exp"));
  EXPECT_EQ(tern::llm::deterministic_exp(-INFINITY), 0.0);
  EXPECT_EQ(tern::llm::deterministic_exp(-800.0), 0.0);
  EXPECT_EQ(tern::llm::deterministic_exp(0.0), 1.0);
}

// softmax(l / T) restricted to `kept` ids (the top-k / top-p set), in double.
std::vector<double> expected(const std::vector<float>& l, double t, const std::vector<int>& kept) {
  std::vector<double> p(l.size(), 0.0);
  double m = -INFINITY, sum = 0;
  for (int i : kept) m = std::fmax(m, l[i]);
  for (int i : kept) sum += p[i] = std::exp((l[i] - m) / t);
  for (double& x : p) x /= sum;
  return p;
}

// Draws n tokens; the chi-square statistic of their counts against p (over
// the ids p gives a probability), and the frequencies.
double chi_square(Sampler& s, const std::vector<float>& l, const std::vector<double>& p, int n,
                  std::vector<double>* freq) {
  std::vector<int> count(l.size(), 0);
  for (int i = 0; i < n; ++i) ++count[draw(s, l)];
  double chi2 = 0;
  freq->assign(l.size(), 0.0);
  for (size_t i = 0; i < l.size(); ++i) {
    (*freq)[i] = static_cast<double>(count[i]) / n;
    if (p[i] > 0) {
      chi2 += (count[i] - n * p[i]) * (count[i] - n * p[i]) / (n * p[i]);
    } else {
      EXPECT_EQ(count[i], 0) << "token " << i << " is outside the kept set but was drawn";
    }
  }
  return chi2;
}

TEST(LlmSampler, DrawsFollowSoftmaxOfTheKeptTokens) {
  const std::vector<float> l = {0.5f, 1.5f, -0.25f, 1.0f, 0.0f, 2.0f, -1.0f, 0.75f};
  const int n = 200000;
  struct Case {
    float t;
    int32_t k;
    float p;
    std::vector<int> kept;  // by logit: 5, 1, 3, 7, 0, 4, 2, 6
    double chi2_max;        // chi-square at p = 0.001 for (kept - 1) degrees of freedom
  };
  const Case cases[] = {
      {1.0f, 0, 1.0f, {0, 1, 2, 3, 4, 5, 6, 7}, 24.32},
      {0.6f, 0, 1.0f, {0, 1, 2, 3, 4, 5, 6, 7}, 24.32},
      {1.3f, 4, 1.0f, {5, 1, 3, 7}, 16.27},
      // T = 1: the largest weights (of 5, 1, 3, 7) are 0.360, 0.579, 0.712, 0.815 of the sum:
      // top-p 0.75 keeps four
      {1.0f, 0, 0.75f, {5, 1, 3, 7}, 16.27},
      // top-k 3 keeps weights 1, 0.607, 0.368: top-p 0.6 keeps the first two (1.607 >= 0.6 * 1.975)
      {1.0f, 3, 0.6f, {5, 1}, 10.83},
  };
  for (const Case& c : cases) {
    Sampler s(opts(c.t, c.k, c.p, 99));
    std::vector<double> p = expected(l, c.t, c.kept), freq;
    double chi2 = chi_square(s, l, p, n, &freq);
    EXPECT_LT(chi2, c.chi2_max) << "T " << c.t << " top-k " << c.k << " top-p " << c.p;
    EXPECT_TRUE(tern::test::all_close(freq, p, 0.0, 0.005, "frequencies"));
  }
}

TEST(LlmSampler, RepeatPenaltyScalesEachRecentTokenOnce) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f};
  std::vector<int32_t> recent = {0, 1, 0, 9, -3, 1};
  tern::llm::apply_repeat_penalty({l.data(), l.size()}, {recent.data(), recent.size()}, 2.0f);
  EXPECT_EQ(l, (std::vector<float>{1.0f, -4.0f, 1.0f, 0.5f}));
}

}  // namespace
