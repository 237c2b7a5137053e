// gemm_bench: GFLOP/s of Tern's f32 GEMMs (C = A x B) at a few large sizes,
// with 1 and 2 threads (or the counts given on the command line):
//   - "cpu": the cpu backend's, a 1x1 convolution of a [1, m, 1, k] image into
//     n channels (how it runs linear layers and pointwise convolutions), its
//     weights packed once beforehand as the exporter packs them, on the ISA
//     this CPU runs best (TERN_CPU_ISA forces one);
//   - "portable": the portable kernels' blocked GEMM (kernels/portable), for
//     reference.
//
//   build/bench/gemm_bench [threads...]     # default: 1 2
//   -> {"gemm": "cpu backend, avx512", "results": [{"gemm": "cpu", "m": 512, "n": 512,
//       "k": 512, "threads": 1, "gflops": 130.1, "ms": 2.06, "gflops_best": 135.2}, ...]}
//
// Sizes: square 512^3 and 1024^3, and 196 x 1024 x 1024 (a 14x14 feature map
// through a 1x1 convolution or a ViT-sized linear layer); then, for the cpu
// backend only, the linear layers of small text transformers: m tokens (32,
// 128, 512) through MiniLM-size BERT layers (hidden 384, fused q/k/v 1152,
// feed-forward 1536) and SmolLM-135M's MLP (hidden 576, 1536).
// bench/gemm_peers.py times ONNX Runtime on the same shapes. 2*m*n*k FLOPs per
// call; the median of the timed calls, after one warm-up call, and the best
// call ("gflops_best": what the machine can do at best, as fma_peak's peak). One JSON line
// on stdout, for bench/run.py, which puts it next to fma_peak's figure (the
// top-level "gemm" names the cpu backend's, the one the goal is about).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/cpu/conv.h"
#include "backends/cpu/isa.h"
#include "kernels/portable/util/gemm.h"
#include "runtime/core/context.h"
#include "runtime/core/thread_pool.h"

namespace {


struct Shape {
  int64_t m, n, k;
  bool portable;  // also time the portable GEMM
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void* align64(std::vector<unsigned char>& buf) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
}

struct Timing {
  double median_ms, best_ms;
};

// Median and best milliseconds of fn() over about 1 s of calls (at least 5),
// after one warm-up call.
template <typename Fn>
Timing time_calls(Fn fn) {
  fn();  // warm up: page in
  const double t0 = now_ms();
  fn();
  const double once = now_ms() - t0;
  const int reps = std::max(5, int(1000.0 / std::max(once, 1e-3)));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t = now_ms();
    fn();
    ms.push_back(now_ms() - t);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[0]};
}

void fill(std::vector<float>& v, int period, float step) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i % period) - period / 2) * step;
}

// The cpu backend: y[m][n] = x[m][k] . w[n][k]^T, as a 1x1 convolution.
Timing time_cpu(const Shape& s, int threads, tern::ThreadPool& pool, const tern::cpu::Isa& isa) {
  tern::cpu::ConvGeometry g{};
  g.n = 1, g.h = s.m, g.w = 1, g.c = s.k, g.oh = s.m, g.ow = 1, g.oc = s.n;
  g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
  std::vector<float> x(s.m * s.k), w(s.n * s.k), y(s.m * s.n), zeros(s.k, 0.0f);
  fill(x, 13, 0.01f);
  fill(w, 7, 0.02f);
  std::vector<unsigned char> packed_buf(tern::cpu::conv_packed_floats(g) * sizeof(float) + 64);
  float* packed = static_cast<float*>(align64(packed_buf));
  tern::cpu::pack_conv_weights(g, w.data(), nullptr, packed);
  const size_t bytes = tern::cpu::conv_scratch_bytes(g, isa);
  const size_t stride = (bytes + 63) & ~size_t(63);
  std::vector<unsigned char> scratch(stride * threads + 64);
  tern::RunContext ctx(nullptr, align64(scratch), bytes, threads, stride, threads > 1 ? &pool : nullptr);
  const tern::cpu::Epilogue ep;
  return time_calls([&] { tern::cpu::run_conv(g, isa, x.data(), packed, zeros.data(), nullptr, y.data(), ep, ctx); });
}

// The portable kernels' blocked GEMM: c[m][n] = a[m][k] . b[k][n].
Timing time_portable(const Shape& s, int threads, tern::ThreadPool& pool) {
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
  fill(a, 13, 0.01f);
  fill(b, 7, 0.02f);
  const size_t bytes = tern::portable::gemm_scratch_bytes(s.m, s.n, s.k);
  const size_t stride = (bytes + 63) & ~size_t(63);
  std::vector<unsigned char> scratch(stride * threads + 64);
  tern::RunContext ctx(nullptr, align64(scratch), bytes, threads, stride, threads > 1 ? &pool : nullptr);
  const tern::portable::GemmParams p = tern::portable::gemm_row_major(s.m, s.n, s.k, a.data(), b.data(), c.data());
  return time_calls([&] { tern::portable::gemm_f32(p, ctx); });
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
  const tern::cpu::Isa* isa = tern::cpu::select_isa();
  if (isa == nullptr) {
    std::fprintf(stderr, "gemm_bench: TERN_CPU_ISA names an ISA this build or CPU lacks\n");
    return 1;
  }
  const Shape shapes[] = {{512, 512, 512, true},    {1024, 1024, 1024, true}, {196, 1024, 1024, true},
                          {128, 384, 384, false},   {128, 1152, 384, false},  {128, 1536, 384, false},
                          {128, 384, 1536, false},  {128, 1536, 576, false},  {128, 576, 1536, false},
                          {32, 1536, 384, false},   {512, 1536, 384, false},  {512, 384, 1536, false}};
  std::printf("{\"gemm\": \"cpu backend, %s\", \"results\": [", isa->name);
  bool first = true;
  for (const char* which : {"cpu", "portable"}) {
    const bool cpu = which[0] == 'c';
    for (const Shape& s : shapes) {
      if (!cpu && !s.portable) continue;
      for (int threads : counts) {
        const Timing t = cpu ? time_cpu(s, threads, pool, *isa) : time_portable(s, threads, pool);
        const double flop = 2.0 * s.m * s.n * s.k;
        std::printf("%s{\"gemm\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"threads\": %d, "
                    "\"gflops\": %.2f, \"ms\": %.3f, \"gflops_best\": %.2f}",
                    first ? "" : ", ", which, (long long)s.m, (long long)s.n, (long long)s.k, threads,
                    flop / (t.median_ms * 1e6), t.median_ms, flop / (t.best_ms * 1e6));
        std::fflush(stdout);
        first = false;
      }
    }
  }
  std::printf("]}\n");
  return 0;
}
