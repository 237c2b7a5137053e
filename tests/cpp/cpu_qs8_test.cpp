// The cpu backend's int8 convolution (backends/cpu/qconv.h and the qs8
// microkernels), on every kernel set this build and CPU have, against a
// reference computed here in int64 and double from the unpacked weights:
// convolutions with padding, stride, dilation, odd channel counts (below, at
// and above a panel and a 4-input group; deep ones, which the amx set runs
// on tiles), linear layers (1x1 over [m, 1, 1, k]) and depthwise ones. Every kernel set must write the same bytes as the
// scalar one, for 1, 2 and 3 threads; each byte is within one step of the
// reference (rounding of the float requantization).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#endif

#include "backends/cpu/qconv.h"
#include "runtime/core/thread_pool.h"

namespace tern {
namespace cpu {
namespace {

struct Case {
  int64_t n, h, w, c, oc;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  bool depthwise;
  bool relu;
  bool halfway = false;  // scale 1/2, small values: about half the outputs exactly halfway (rounding mode)
};

std::string name(const Case& k) {
  char buf[160];
  snprintf(buf, sizeof(buf), "n%lld h%lld w%lld c%lld oc%lld k%dx%d s%d,%d p%d,%d d%d,%d%s%s", (long long)k.n,
           (long long)k.h, (long long)k.w, (long long)k.c, (long long)k.oc, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh,
           k.dw, k.depthwise ? " depthwise" : "", k.relu ? " relu" : "");
  return buf;
}

ConvGeometry geometry(const Case& k) {
  ConvGeometry g{};
  g.n = k.n, g.h = k.h, g.w = k.w, g.c = k.c, g.oc = k.oc;
  g.kh = k.kh, g.kw = k.kw, g.sh = k.sh, g.sw = k.sw, g.ph = k.ph, g.pw = k.pw, g.dh = k.dh, g.dw = k.dw;
  g.oh = (k.h + 2 * k.ph - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  g.ow = (k.w + 2 * k.pw - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  g.depthwise = k.depthwise;
  return g;
}

struct Outcome {
  std::vector<int8_t> y;
  std::vector<double> want;  // the exact requantized value before rounding, per output
};

// Runs the case with kernel set `ks` on `threads` threads; fills want too.
Outcome run(const Case& k, const Qs8Kernels& kernels, int threads) {
  const ConvGeometry g = geometry(k);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> byte(-128, 127), zp(-20, 20);
  std::uniform_real_distribution<float> unit(0.5f, 1.5f);
  const int64_t ks = int64_t(k.kh) * k.kw, cin = k.depthwise ? 1 : k.c;
  std::vector<int8_t> x(size_t(g.n * g.h * g.w * g.c)), w(size_t(g.oc * cin * ks));
  for (auto& v : x) v = int8_t(k.halfway ? byte(rng) / 16 : byte(rng));
  for (auto& v : w) v = int8_t(k.halfway ? byte(rng) / 43 : byte(rng) * 127 / 128);  // [-127, 127], as symmetric weights are
  const int32_t x_zp = k.halfway ? zp(rng) / 10 : zp(rng), y_zp = zp(rng);
  const float x_scale = k.halfway ? 0.5f : 0.02f * unit(rng);
  const float y_scale = k.halfway ? 1.0f : 0.05f * unit(rng) * std::sqrt(float(cin * ks));
  std::vector<float> w_scales(size_t(g.oc)), bias(size_t(g.oc));
  for (auto& s : w_scales) s = k.halfway ? 1.0f : 0.01f * unit(rng);
  for (auto& b : bias) b = k.halfway ? 0.0f : (unit(rng) - 1.0f) * 2.0f;

  std::vector<int8_t> packed(qs8_packed_bytes(g));
  pack_qs8_weights(g, w.data(), packed.data());
  const size_t nch = static_cast<size_t>(qs8_channels(g));
  std::vector<int32_t> init(nch);
  std::vector<float> scale(nch), offset(nch);
  const int64_t bad = qs8_requant(g, packed.data(), x_scale, x_zp, w_scales.data(), bias.data(), y_scale, y_zp,
                                  kernels, init.data(), scale.data(), offset.data());
  EXPECT_EQ(bad, -1) << name(k) << ": a requantization out of bounds";
  Qs8Conv q{g, packed.data(), init.data(), scale.data(), offset.data(), k.relu ? float(y_zp) : -128.0f, 127.0f};
  std::vector<int8_t> zeros(size_t(g.c + 3) / 4 * 4, int8_t(x_zp));

  Outcome out;
  out.y.assign(size_t(g.n * g.oh * g.ow * g.oc), int8_t(0x5a));
  static ThreadPool pool;
  const size_t per = (qs8_conv_scratch_bytes(g, kernels) + 63) & ~size_t(63);
  std::vector<uint8_t> scratch(per * size_t(threads) + 64);
  void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  RunContext ctx(nullptr, base, per, threads, per, threads > 1 ? &pool : nullptr);
  run_qs8_conv(q, kernels, x.data(), zeros.data(), out.y.data(), ctx);

  for (int64_t b = 0; b < g.n; ++b) {
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        for (int64_t o = 0; o < g.oc; ++o) {
          int64_t acc = 0;
          for (int64_t ci = 0; ci < cin; ++ci) {
            const int64_t xc = k.depthwise ? o : ci;
            for (int ki = 0; ki < k.kh; ++ki) {
              for (int kj = 0; kj < k.kw; ++kj) {
                const int64_t iy = oy * k.sh - k.ph + ki * k.dh, ix = ox * k.sw - k.pw + kj * k.dw;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;  // the real 0
                const int64_t xv = x[size_t(((b * g.h + iy) * g.w + ix) * g.c + xc)] - x_zp;
                acc += xv * w[size_t((o * cin + ci) * ks + ki * k.kw + kj)];
              }
            }
          }
          double v = (double(x_scale) * w_scales[size_t(o)] * double(acc) + bias[size_t(o)]) / y_scale + y_zp;
          v = std::fmin(std::fmax(v, q.qmin), q.qmax);
          out.want.push_back(v);
        }
      }
    }
  }
  return out;
}

std::vector<Case> cases() {
  std::vector<Case> out = {
      {1, 5, 6, 3, 8, 3, 3, 1, 1, 1, 1, 1, 1, false, false},       // c below a group of 4, oc below a panel
      {2, 7, 5, 17, 33, 3, 3, 2, 1, 1, 0, 1, 1, false, true},      // odd everything, relu
      {1, 6, 6, 16, 16, 3, 3, 1, 1, 2, 2, 2, 2, false, false},     // dilation, exact panel
      {1, 9, 9, 32, 40, 1, 1, 1, 1, 0, 0, 1, 1, false, true},      // pointwise
      {13, 1, 1, 67, 21, 1, 1, 1, 1, 0, 0, 1, 1, false, false},    // a linear layer over 13 rows
      {1, 1, 1, 256, 70, 1, 1, 1, 1, 0, 0, 1, 1, false, false},    // one row (a GEMV)
      {1, 8, 7, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, true, true},       // depthwise
      {2, 9, 10, 35, 35, 5, 5, 2, 2, 2, 2, 1, 1, true, false},     // depthwise, channel tail, stride 2
      {2, 7, 9, 100, 70, 3, 3, 1, 1, 1, 1, 1, 1, false, true},     // deep (AMX): 64 inputs and a tail a tap, 5 panels
      {1, 5, 6, 40, 33, 3, 3, 2, 2, 1, 1, 1, 1, false, false},     // deep: only a tail a tap (kc4 40)
      {37, 1, 1, 300, 130, 1, 1, 1, 1, 0, 0, 1, 1, false, false},  // a deep linear layer, 37 rows, 9 panels
      {1, 6, 7, 35, 35, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},    // depthwise, halfway values
      {1, 5, 5, 16, 40, 1, 1, 1, 1, 0, 0, 1, 1, false, false, true},   // pointwise, halfway values
      {1, 6, 5, 5, 19, 3, 3, 1, 1, 1, 1, 1, 1, false, true, true},     // general, halfway values
      {1, 4, 5, 72, 20, 2, 2, 1, 1, 0, 0, 1, 1, false, false, true},   // deep, halfway values
      {1, 6, 7, 20, 20, 2, 4, 1, 1, 1, 2, 1, 1, true, false},      // depthwise, an even number of taps
      {1, 11, 12, 18, 18, 9, 9, 1, 1, 4, 4, 1, 1, true, true},     // depthwise of 81 taps (AVX2: one at a time)
      {1, 9, 8, 13, 20, 17, 17, 1, 1, 8, 8, 1, 1, false, false},   // 13 inputs a tap, 289 taps: too deep for im2col
  };
  return out;
}

std::vector<const Qs8Kernels*> kernel_sets() {
  const Qs8Kernels* out[kMaxKernelSets];
  const int n = supported_qs8_kernels(out, kMaxKernelSets);
  return std::vector<const Qs8Kernels*>(out, out + n);
}

std::vector<std::string> names(const std::vector<const Qs8Kernels*>& sets) {
  std::vector<std::string> out;
  for (const Qs8Kernels* k : sets) out.push_back(k->name);
  return out;
}

// The int8 kernel sets this CPU and OS should give, best first, worked out
// here without the code under test (runtime/core/cpu_info.cpp asks cpuid and
// libgcc's __builtin_cpu_supports): on Linux x86-64 from the flags of
// /proc/cpuinfo, which the kernel clears for registers whose state it does
// not save (so they say what the OS supports too), and for AMX the kernel's
// grant of the tile data state to this process (arch_prctl
// ARCH_REQ_XCOMP_PERM, XTILEDATA); on Linux aarch64 from the auxiliary
// vector's HWCAP_ASIMDDP. Each set needs (backends/cpu/isa.cpp):
//   amx         AMX-TILE, AMX-INT8, and what avx512vnni needs, and the grant
//   avx512vnni  AVX-512F, VNNI, BW, VL, and what avx2 needs
//   avx2        AVX2 and FMA
//   neondot     the dot product (SDOT)
//   scalar      nothing
// `why` says how it was found; false when this platform has no such oracle.
bool expected_qs8_sets(std::vector<std::string>* out, std::string* why) {
  out->clear();
#if defined(__linux__) && defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.compare(0, 5, "flags") != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;  // the first CPU's
  }
  if (flags.empty()) {
    *why = "no flags line in /proc/cpuinfo";
    return false;
  }
  auto has = [&](const char* f) { return flags.count(f) != 0; };
  const bool avx2 = has("avx2") && has("fma");
  const bool vnni = avx2 && has("avx512f") && has("avx512_vnni") && has("avx512bw") && has("avx512vl");
  bool amx = vnni && has("amx_tile") && has("amx_int8");
  if (amx) {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    amx = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }
  if (amx) out->push_back("amx");
  if (vnni) out->push_back("avx512vnni");
  if (avx2) out->push_back("avx2");
  *why = std::string("/proc/cpuinfo: avx2+fma ") + (avx2 ? "yes" : "no") + ", avx512f+vnni+bw+vl " +
         (vnni ? "yes" : "no") + ", amx_tile+amx_int8 granted " + (amx ? "yes" : "no");
#elif defined(__linux__) && defined(__aarch64__)
  const bool dot = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  if (dot) out->push_back("neondot");
  *why = std::string("AT_HWCAP asimddp ") + (dot ? "yes" : "no");
#else
  *why = "no CPU feature oracle on this platform";
  return false;
#endif
  out->push_back("scalar");
  return true;
}

// The kernel sets the backend reports are those the CPU's features call for,
// best first, scalar last: a set dropped (or added) by a mistake in the
// feature detection or the table fails here, not only as less coverage.
TEST(CpuQs8, test_the_kernel_sets_are_those_the_cpu_features_call_for) {
  ASSERT_FALSE(kernel_sets().empty());
  EXPECT_EQ(kernel_sets().back()->name, std::string("scalar"));
  std::vector<std::string> want;
  std::string why;
  if (!expected_qs8_sets(&want, &why)) GTEST_SKIP() << why;
  EXPECT_EQ(names(kernel_sets()), want) << why;
}

TEST(CpuQs8, test_every_kernel_set_is_within_one_step_and_writes_the_scalar_bytes) {
  const std::vector<const Qs8Kernels*> all = kernel_sets();
  for (const Case& k : cases()) {
    const Outcome ref = run(k, *all.back(), 1);
    size_t off_by_one = 0, halves = 0;
    for (size_t i = 0; i < ref.y.size(); ++i) {
      const double d = std::fabs(double(ref.y[i]) - ref.want[i]);
      ASSERT_LE(d, 1.0) << name(k) << " output " << i << ": " << int(ref.y[i]) << " vs " << ref.want[i];
      off_by_one += d > 0.5 + 1e-6;
      halves += ref.want[i] - std::floor(ref.want[i]) == 0.5;
      if (k.halfway && ref.want[i] - std::floor(ref.want[i]) == 0.5) {  // the scalar kernel: half to even
        ASSERT_EQ(int(ref.y[i]) % 2, 0) << name(k) << " output " << i << ": " << int(ref.y[i]) << " vs " << ref.want[i];
      }
    }
    EXPECT_LE(off_by_one * 100, ref.y.size()) << name(k) << ": more than 1% of outputs off by one step";
    if (k.halfway) {
      EXPECT_GE(halves * 5, ref.y.size()) << name(k) << ": fewer than 20% of outputs exactly halfway";
    }
    for (const Qs8Kernels* ks : all) {
      for (int threads : {1, 2, 3}) {
        const Outcome got = run(k, *ks, threads);
        ASSERT_EQ(got.y, ref.y) << name(k) << " on " << ks->name << " with " << threads << " threads";
      }
    }
  }
}

// A NaN requantization (a scale of NaN; a QConv's load refuses scales whose
// product overflows, so this is the clamp's last line): every kernel set's
// igemm and depthwise kernel write qmin, as x86's max(NaN, qmin) gives. The
// scalar one converted the NaN to int8 (undefined; 0 on x86-64), NEON's max
// kept it (0).
TEST(CpuQs8, test_every_igemm_and_depthwise_kernel_maps_a_nan_requantization_to_qmin) {
  const Case general = {1, 5, 6, 3, 8, 3, 3, 1, 1, 1, 1, 1, 1, false, false};
  const Case deep = {2, 7, 9, 100, 70, 3, 3, 1, 1, 1, 1, 1, 1, false, false};
  const Case depthwise = {1, 8, 7, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, true, false};
  for (const Case& c : {general, deep, depthwise}) {
    const ConvGeometry g = geometry(c);
    std::vector<int8_t> x(size_t(g.n * g.h * g.w * g.c), 3), packed(qs8_packed_bytes(g), 1);
    const size_t nch = size_t(qs8_channels(g));
    std::vector<int32_t> init(nch, 0);
    std::vector<float> scale(nch, std::nanf("")), offset(nch, 0.0f);
    const Qs8Conv q{g, packed.data(), init.data(), scale.data(), offset.data(), -100.0f, 100.0f};
    std::vector<int8_t> zeros(size_t(g.c + 3) / 4 * 4, 0);
    for (const Qs8Kernels* k : kernel_sets()) {
      std::vector<int8_t> y(size_t(g.n * g.oh * g.ow * g.oc), 0x5a);
      const size_t per = (qs8_conv_scratch_bytes(g, *k) + 63) & ~size_t(63);
      std::vector<uint8_t> scratch(per + 64);
      void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
      RunContext ctx(nullptr, base, per, 1, per, nullptr);
      run_qs8_conv(q, *k, x.data(), zeros.data(), y.data(), ctx);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(int(y[i]), -100) << name(c) << " on " << k->name << ", output " << i;
    }
  }
}

// Quantize and the add / mul of two int8 tensors: every kernel set writes the
// scalar kernel's bytes (halfway values, both clamps, a NaN, every tail
// length); and the scalar kernel is what PyTorch computes (spelled out here).
TEST(CpuQs8, test_quantize_and_binary_kernels_agree_with_the_float_formula_on_every_set) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::uniform_int_distribution<int> byte(-128, 127);
  const Qs8QuantizeParams qp{1.0f / 0.0125f, 3.0f, -128.0f, 120.0f};
  for (bool mul : {false, true}) {
    const Qs8BinaryParams bp{0.02f, -5.0f, 0.03f, 7.0f, 1.0f / (mul ? 0.01f : 0.04f), -2.0f, -2.0f, 127.0f, mul};
    for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(15), size_t(16), size_t(17), size_t(100)}) {
      std::vector<float> x(n);
      std::vector<int8_t> a(n), b(n);
      for (size_t i = 0; i < n; ++i) {
        x[i] = i % 5 == 0 ? (float(int(i) - 50) + 0.5f) * 0.0125f : u(rng);  // every 5th a halfway value
        a[i] = int8_t(byte(rng)), b[i] = int8_t(byte(rng));
      }
      if (n > 3) x[3] = __builtin_nanf("");
      std::vector<int8_t> q_want(n), b_want(n);
      for (size_t i = 0; i < n; ++i) {
        const float v = x[i] * qp.inv_scale;
        q_want[i] = v != v ? int8_t(qp.qmin) : int8_t(std::fmin(std::fmax(std::nearbyint(v) + qp.zero_point, qp.qmin), qp.qmax));
        const float fa = (float(a[i]) - bp.a_zero) * bp.a_scale, fb = (float(b[i]) - bp.b_zero) * bp.b_scale;
        const float w = (mul ? fa * fb : fa + fb) * bp.y_inv_scale;
        b_want[i] = int8_t(std::fmin(std::fmax(std::nearbyint(w) + bp.y_zero, bp.qmin), bp.qmax));
      }
      for (const Qs8Kernels* k : kernel_sets()) {
        std::vector<int8_t> q(n, 0x55), y(n, 0x55);
        k->quantize(n, x.data(), q.data(), qp);
        k->binary(n, a.data(), b.data(), y.data(), bp);
        ASSERT_EQ(q, q_want) << k->name << " quantize, n " << n;
        ASSERT_EQ(y, b_want) << k->name << (mul ? " mul" : " add") << ", n " << n;
      }
    }
  }
}

TEST(CpuQs8, test_every_minmax_kernel_finds_the_range_skipping_nans) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-5.0f, 5.0f);
  for (size_t n : {size_t(1), size_t(5), size_t(16), size_t(17), size_t(100), size_t(1000)}) {
    std::vector<float> x(n);
    for (float& v : x) v = u(rng);
    if (n > 2) x[n / 2] = __builtin_nanf("");
    float want_lo = x[0], want_hi = x[0];
    for (float v : x) {
      if (v == v) want_lo = std::fmin(want_lo, v), want_hi = std::fmax(want_hi, v);
    }
    for (const Qs8Kernels* k : kernel_sets()) {
      float lo = 0, hi = 0;
      k->minmax(n, x.data(), &lo, &hi);
      EXPECT_EQ(lo, want_lo) << k->name << " n " << n;
      EXPECT_EQ(hi, want_hi) << k->name << " n " << n;
    }
  }
}

// Max and average pooling of int8 pixels: every kernel set writes the bytes
// of PyTorch's dequantize -> pool -> quantize, spelled out here in float32
// (avg_pool2d's CPU kernel sums the window's values in order, then divides),
// for channel counts around every vector width, windows of 1 to 49 taps, and
// windows of 2 and 4 with the same scale in and out (exact halfway averages).
TEST(CpuQs8, test_every_pool_kernel_writes_pytorchs_bytes) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(-128, 127);
  for (const Qs8PoolParams& p : {Qs8PoolParams{0.05f, -7.0f, 1.0f / 0.04f, 3.0f, -100.0f, 127.0f},
                                 Qs8PoolParams{0.0173f, 5.0f, float(1.0 / double(0.0173f)), 5.0f, -128.0f, 127.0f}}) {
    for (size_t channels : {1, 7, 8, 9, 15, 16, 17, 31, 33, 64}) {
      for (size_t ks : {1, 2, 4, 9, 49}) {
        const size_t pixels = 3;
        std::vector<std::vector<int8_t>> rows(pixels * ks, std::vector<int8_t>(channels));
        std::vector<const int8_t*> in;
        for (auto& r : rows) {
          for (int8_t& v : r) v = int8_t(byte(rng));
          in.push_back(r.data());
        }
        std::vector<float> count(pixels);
        for (size_t px = 0; px < pixels; ++px) count[px] = float(ks - (px == 1 && ks > 1));  // a padding tap left out
        std::vector<int8_t> want_max(pixels * channels), want_avg(pixels * channels);
        auto quantize = [&](float v) {
          return int8_t(std::fmin(std::fmax(std::nearbyint(v * p.y_inv_scale) + p.y_zero, p.qmin), p.qmax));
        };
        for (size_t px = 0; px < pixels; ++px) {
          for (size_t j = 0; j < channels; ++j) {
            float m = -INFINITY, sum = 0.0f;
            for (size_t t = 0; t < ks; ++t) {
              const float f = (float(in[px * ks + t][j]) - p.x_zero) * p.x_scale;
              m = std::fmax(m, f), sum += f;
            }
            want_max[px * channels + j] = quantize(m);
            want_avg[px * channels + j] = quantize(sum / count[px]);
          }
        }
        for (const Qs8Kernels* k : kernel_sets()) {
          std::vector<int8_t> got_max(pixels * channels, 0x55), got_avg(pixels * channels, 0x55);
          k->pool(channels, pixels, ks, in.data(), nullptr, got_max.data(), channels, p);
          k->pool(channels, pixels, ks, in.data(), count.data(), got_avg.data(), channels, p);
          ASSERT_EQ(got_max, want_max) << k->name << " max, " << channels << " channels, " << ks << " taps";
          ASSERT_EQ(got_avg, want_avg) << k->name << " average, " << channels << " channels, " << ks << " taps";
        }
      }
    }
  }
}

TEST(CpuQs8, test_a_forced_isa_picks_its_int8_kernels) {
  setenv("TERN_CPU_ISA", "scalar", 1);
  const Qs8Kernels* k = select_qs8_kernels();
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "scalar");
  std::vector<std::string> want;
  std::string why;
  const bool known = expected_qs8_sets(&want, &why);
  if (!known) want = names(kernel_sets());  // no oracle here: at least the forced choice follows the list
  auto in_want = [&](const char* set) { return std::find(want.begin(), want.end(), set) != want.end(); };
#if defined(__x86_64__)
  setenv("TERN_CPU_ISA", "avx2", 1);  // the avx2 set where the CPU has AVX2 and FMA, else none
  k = select_qs8_kernels();
  if (in_want("avx2")) {
    ASSERT_NE(k, nullptr) << why;
    EXPECT_STREQ(k->name, "avx2") << why;
  } else {
    EXPECT_EQ(k, nullptr) << why;
  }
#endif
  const bool amx = in_want("amx");  // TERN_CPU_ISA=amx: the amx set where the CPU has it, else none
  setenv("TERN_CPU_ISA", "amx", 1);
  k = select_qs8_kernels();
  if (amx) {
    ASSERT_NE(k, nullptr) << why;
    EXPECT_STREQ(k->name, "amx") << why;
  } else {
    EXPECT_EQ(k, nullptr) << why << "; got " << (k ? k->name : "");
  }
  setenv("TERN_CPU_ISA", "no-such-isa", 1);
  EXPECT_EQ(select_qs8_kernels(), nullptr);
  unsetenv("TERN_CPU_ISA");
  k = select_qs8_kernels();  // unforced: the best the CPU's features call for
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(std::string(k->name), want.front()) << why;
}

}  // namespace
}  // namespace cpu
}  // namespace tern
