// fma_peak: this machine's f32 fused-multiply-add peak, in GFLOP/s, for 1 and
// 2 threads (or the counts given on the command line).
//
//   build/bench/fma_peak [threads...]       # default: 1 2
//   -> {"isa": "avx512", "lanes": 16, "chains": 12, "gflops": {"1": 110.9, "2": 221.5}}
//
// The best instruction set is picked at run time from CPU features (never
// assumed at build time: the machine's CPU changes between sessions):
// AVX-512F, then AVX2 + FMA, then NEON (aarch64), else a scalar loop (which
// measures what the compiler makes of plain C++, not a hardware peak).
//
// Each thread runs kChains independent FMA chains (acc = acc * x + y) so that
// the FMA units' latency is hidden (latency 4 x 2 ports needs >= 8 chains);
// each FMA of one vector counts 2 * lanes FLOPs. A run is repeated and the best
// time kept: the machine is shared, and the peak is what it can do at best.
// One JSON line on stdout, for bench/run.py.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace {

constexpr int kChains = 12;
constexpr long kIters = 20'000'000;  // per chain per run: about 0.1-0.5 s per thread

// Each kernel returns a value derived from every chain so nothing is dead code.
using KernelFn = float (*)(long iters);

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f"))) float fma_avx512(long iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * i);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float fma_avx2(long iters) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.001f * i);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
#endif

#if defined(__aarch64__)
float fma_neon(long iters) {
  float32x4_t acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vdupq_n_f32(1.0f + 0.001f * i);
  const float32x4_t x = vdupq_n_f32(0.999999f), y = vdupq_n_f32(1e-7f);
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = vfmaq_f32(y, acc[i], x);
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < kChains; ++i) s = vaddq_f32(s, acc[i]);
  return vaddvq_f32(s);
}
#endif

float fma_scalar(long iters) {
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = 1.0f + 0.001f * i;
  const float x = 0.999999f, y = 1e-7f;
  for (long n = 0; n < iters; ++n) {
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * x + y;
  }
  float s = 0;
  for (int i = 0; i < kChains; ++i) s += acc[i];
  return s;
}

struct Isa {
  const char* name;
  int lanes;
  KernelFn fn;
};

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", 16, fma_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", 8, fma_avx2};
#endif
#if defined(__aarch64__)
  return {"neon", 4, fma_neon};  // NEON is part of every aarch64 CPU
#endif
  return {"scalar", 1, fma_scalar};
}

// GFLOP/s of `threads` threads each running the kernel at once; best of `reps`.
double measure(const Isa& isa, int threads, int reps) {
  double best = 0;
  volatile float sink = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<std::thread> pool;
    std::vector<float> out(threads);
    auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { out[t] = isa.fn(kIters); });
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : out) sink = sink + v;
    double flops = 2.0 * isa.lanes * kChains * double(kIters) * threads;
    if (flops / s / 1e9 > best) best = flops / s / 1e9;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, 2};
  const Isa isa = detect();
  isa.fn(kIters / 10);  // warm up (clocks, AVX-512 license)
  std::printf("{\"isa\": \"%s\", \"lanes\": %d, \"chains\": %d, \"gflops\": {", isa.name, isa.lanes, kChains);
  for (size_t i = 0; i < counts.size(); ++i) {
    std::printf("%s\"%d\": %.1f", i ? ", " : "", counts[i], measure(isa, counts[i], 5));
  }
  std::printf("}}\n");
  return 0;
}
