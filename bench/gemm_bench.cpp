// gemm_bench: GFLOP/s of Tern's f32 GEMM (C = A x B, row-major) at a few
// large sizes, with 1 and 2 threads (or the counts given on the command line).
//
//   build/bench/gemm_bench [threads...]     # default: 1 2
//   -> {"gemm": "portable", "results": [{"m": 512, "n": 512, "k": 512, "threads": 1,
//       "gflops": 30.1, "ms": 8.9}, ...]}
//
// Sizes: square 512^3 and 1024^3, and 196 x 1024 x 1024 (a 14x14 feature map
// through a 1x1 convolution or a ViT-sized linear layer). 2*m*n*k FLOPs per
// call; the median of the timed calls, after one warm-up call. One JSON line
// on stdout, for bench/run.py, which puts it next to fma_peak's figure.
//
// The GEMM under test is called in one place, run_gemm() below: point it at
// the optimized backend's GEMM when that lands (and say so in kGemmName).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/portable/util/gemm.h"
#include "runtime/core/context.h"
#include "runtime/core/thread_pool.h"

namespace {

// ---- the GEMM being measured (the one place to change) ---------------------
constexpr const char* kGemmName = "portable";

size_t gemm_scratch(int64_t m, int64_t n, int64_t k) { return tern::portable::gemm_scratch_bytes(m, n, k); }

void run_gemm(const tern::portable::GemmParams& p, tern::RunContext& ctx) { tern::portable::gemm_f32(p, ctx); }
// ----------------------------------------------------------------------------

struct Shape {
  int64_t m, n, k;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void* align64(std::vector<unsigned char>& buf) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
}

// Median milliseconds of one m x n x k GEMM over `threads` threads.
double time_gemm(const Shape& s, int threads, tern::ThreadPool& pool) {
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.01f - 0.06f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.02f - 0.06f;
  const size_t bytes = gemm_scratch(s.m, s.n, s.k);
  const size_t stride = (bytes + 63) & ~size_t(63);
  std::vector<unsigned char> scratch(stride * threads + 64);
  tern::RunContext ctx(nullptr, align64(scratch), bytes, threads, stride, threads > 1 ? &pool : nullptr);
  const tern::portable::GemmParams p = tern::portable::gemm_row_major(s.m, s.n, s.k, a.data(), b.data(), c.data());

  run_gemm(p, ctx);  // warm up: page in, pack once
  // About 1 s of timed calls, at least 5.
  const double t0 = now_ms();
  run_gemm(p, ctx);
  const double once = now_ms() - t0;
  const int reps = std::max(5, int(1000.0 / std::max(once, 1e-3)));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t = now_ms();
    run_gemm(p, ctx);
    ms.push_back(now_ms() - t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, 2};
  tern::ThreadPool pool;
  const int most = *std::max_element(counts.begin(), counts.end());
  if (most > 1 && pool.reserve(most) != tern::Error::Ok) {
    std::fprintf(stderr, "gemm_bench: cannot start %d threads\n", most);
    return 1;
  }
  const Shape shapes[] = {{512, 512, 512}, {1024, 1024, 1024}, {196, 1024, 1024}};
  std::printf("{\"gemm\": \"%s\", \"results\": [", kGemmName);
  bool first = true;
  for (const Shape& s : shapes) {
    for (int threads : counts) {
      const double ms = time_gemm(s, threads, pool);
      const double gflops = 2.0 * s.m * s.n * s.k / (ms * 1e6);
      std::printf("%s{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"threads\": %d, \"gflops\": %.2f, \"ms\": %.3f}",
                  first ? "" : ", ", (long long)s.m, (long long)s.n, (long long)s.k, threads, gflops, ms);
      std::fflush(stdout);
      first = false;
    }
  }
  std::printf("]}\n");
  return 0;
}
