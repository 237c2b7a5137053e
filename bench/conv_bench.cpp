// conv_bench: one convolution layer of the cpu backend, timed alone: the
// layer-level microbenchmark for tuning a microkernel or a driver (whole
// models go through `make bench`). Best and median of about 0.5 s of calls
// per thread count; best is the figure to compare on a noisy machine.
//
//   build/bench/conv_bench LAYER... [--threads 1,2]
//   LAYER = n,h,w,c,oc,k,stride,pad[,dw][,res][,silu]    e.g. 1,112,112,32,32,3,1,1,dw
//   (dw: depthwise, c == oc; res: a residual added before the activation;
//   silu: SiLU instead of relu6)
//   -> dw3x3/s1 32->32 112x112 (n=1)  threads 1: best 0.180 ms (40.1 GFLOP/s), median 0.195 ms
//
// TERN_CPU_ISA=scalar|avx2|avx512 forces an ISA. Weights and inputs are
// fixed patterns; bias and relu6 are applied as in the models.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/conv.h"
#include "backends/cpu/isa.h"
#include "runtime/core/context.h"
#include "runtime/core/thread_pool.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void* align64(std::vector<unsigned char>& buf) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
}

bool parse_layer(const char* s, tern::cpu::ConvGeometry* g, bool* res, bool* silu) {
  long long v[8];
  int used = 0;
  if (std::sscanf(s, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld%n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                  &v[7], &used) != 8) {
    return false;
  }
  const char* rest = s + used;
  const bool dw = std::strncmp(rest, ",dw", 3) == 0;
  if (dw) rest += 3;
  *res = std::strncmp(rest, ",res", 4) == 0;
  if (*res) rest += 4;
  *silu = std::strcmp(rest, ",silu") == 0;
  if (*rest != '\0' && !*silu) return false;
  if (v[0] < 1 || v[1] < 1 || v[2] < 1 || v[3] < 1 || v[4] < 1 || v[5] < 1 || v[6] < 1 || v[7] < 0) return false;
  if (dw && v[3] != v[4]) return false;
  *g = tern::cpu::ConvGeometry{};
  g->n = v[0], g->h = v[1], g->w = v[2], g->c = v[3], g->oc = v[4];
  g->kh = g->kw = int32_t(v[5]), g->sh = g->sw = int32_t(v[6]), g->ph = g->pw = int32_t(v[7]);
  g->dh = g->dw = 1;
  g->depthwise = dw;
  g->oh = (g->h + 2 * g->ph - g->kh) / g->sh + 1;
  g->ow = (g->w + 2 * g->pw - g->kw) / g->sw + 1;
  return g->oh >= 1 && g->ow >= 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<tern::cpu::ConvGeometry> layers;
  std::vector<bool> residuals, silus;
  std::vector<int> counts = {1, 2};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      counts.clear();
      for (char* p = argv[++i]; *p;) {
        counts.push_back(int(std::strtol(p, &p, 10)));
        if (*p == ',') ++p;
        else if (*p) break;
      }
      continue;
    }
    tern::cpu::ConvGeometry g;
    bool res = false, silu = false;
    if (!parse_layer(argv[i], &g, &res, &silu)) {
      std::fprintf(stderr, "conv_bench: %s: expected n,h,w,c,oc,k,stride,pad[,dw][,res][,silu] (dw: c == oc)\n",
                   argv[i]);
      return 2;
    }
    layers.push_back(g);
    residuals.push_back(res);
    silus.push_back(silu);
  }
  if (layers.empty() || counts.empty() || *std::min_element(counts.begin(), counts.end()) < 1) {
    std::fprintf(stderr, "usage: conv_bench n,h,w,c,oc,k,stride,pad[,dw][,res][,silu]... [--threads 1,2]\n");
    return 2;
  }
  const tern::cpu::Isa* isa = tern::cpu::select_isa();
  if (isa == nullptr) return 1;
  tern::ThreadPool pool;
  const int most = *std::max_element(counts.begin(), counts.end());
  if (most > 1 && pool.reserve(most) != tern::Error::Ok) return 1;
  for (size_t li = 0; li < layers.size(); ++li) {
    const tern::cpu::ConvGeometry& g = layers[li];
    const int64_t cg = g.depthwise ? 1 : g.c;
    std::vector<float> x(size_t(g.n * g.h * g.w * g.c)), w(size_t(g.oc * cg * g.kh * g.kw)), bias(size_t(g.oc));
    std::vector<float> y(size_t(g.n * g.oh * g.ow * g.oc)), zeros(tern::cpu::conv_zero_floats(g), 0.f);
    std::vector<float> residual(residuals[li] ? y.size() : 0, 0.5f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) * 0.1f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) * 0.05f;
    std::vector<unsigned char> packed_buf(tern::cpu::conv_packed_floats(g) * sizeof(float) + 64);
    float* packed = static_cast<float*>(align64(packed_buf));
    tern::cpu::pack_conv_weights(g, w.data(), bias.data(), packed);
    tern::cpu::Epilogue ep;
    ep.activation = silus[li] ? tern::cpu::Activation::Silu : tern::cpu::Activation::Clamp;
    ep.clamp = {0.f, 6.f};
    ep.vact = isa->vact;
    const double flop = 2.0 * double(y.size()) * double(cg * g.kh * g.kw);
    std::printf("%s%dx%d/s%d %lld->%lld %lldx%lld%s%s (n=%lld, %s)\n", g.depthwise ? "dw" : "", g.kh, g.kw, g.sh,
                (long long)g.c, (long long)g.oc, (long long)g.oh, (long long)g.ow, residuals[li] ? " + residual" : "",
                silus[li] ? ", silu" : ", relu6", (long long)g.n, isa->name);
    for (int threads : counts) {
      const size_t bytes = tern::cpu::conv_scratch_bytes(g, *isa), stride = (bytes + 63) & ~size_t(63);
      std::vector<unsigned char> scratch(stride * size_t(threads) + 64);
      tern::RunContext ctx(nullptr, align64(scratch), bytes, threads, stride, threads > 1 ? &pool : nullptr);
      auto call = [&] {
        tern::cpu::run_conv(g, *isa, x.data(), packed, zeros.data(), residual.empty() ? nullptr : residual.data(),
                            y.data(), ep, ctx);
      };
      call();
      std::vector<double> ms;
      for (double start = now_ms(); now_ms() - start < 500 || ms.size() < 5;) {
        const double t = now_ms();
        call();
        ms.push_back(now_ms() - t);
      }
      std::sort(ms.begin(), ms.end());
      std::printf("  threads %d: best %.4f ms (%.1f GFLOP/s), median %.4f ms (%.1f GFLOP/s)\n", threads, ms[0],
                  flop / (ms[0] * 1e6), ms[ms.size() / 2], flop / (ms[ms.size() / 2] * 1e6));
    }
  }
  return 0;
}
