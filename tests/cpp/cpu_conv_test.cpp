// The cpu backend's microkernels and its convolution driver
// (backends/cpu/ukernels/, backends/cpu/conv.h), on every ISA this build and
// CPU have, against references computed in double precision: sizes below,
// at and above each tile, odd channel counts, padding, strides, dilation,
// residuals and activations; and the same bits for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/cpp/random_util.h"
#include "backends/cpu/conv.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/program.h"
#include "runtime/core/thread_pool.h"

namespace tern {
namespace cpu {
namespace {

std::vector<const Isa*> isas() {
  const Isa* out[kMaxKernelSets];
  int n = supported_isas(out, kMaxKernelSets);
  return std::vector<const Isa*>(out, out + n);
}

using test::random_floats;

TEST(CpuIsa, test_scalar_is_always_there_and_best_comes_first) {
  std::vector<const Isa*> all = isas();
  ASSERT_FALSE(all.empty());
  EXPECT_STREQ(all.back()->name, "scalar");
  EXPECT_EQ(find_isa("scalar"), all.back());
  EXPECT_EQ(find_isa("no-such-isa"), nullptr);
  for (const Isa* isa : all) {
    EXPECT_EQ(isa->igemm_main.mr, isa->igemm_tail.mr) << isa->name;
    EXPECT_EQ(isa->igemm_tail.nr, kPanel) << isa->name;
    EXPECT_EQ(isa->igemm_row.mr, 1) << isa->name;
    EXPECT_EQ(isa->igemm_row.nr % kPanel, 0) << isa->name;
  }
}

TEST(CpuIsa, test_environment_variable_forces_an_isa) {
  setenv("TERN_CPU_ISA", "scalar", 1);
  EXPECT_STREQ(select_isa()->name, "scalar");
  setenv("TERN_CPU_ISA", "not-an-isa", 1);
  EXPECT_EQ(select_isa(), nullptr);
  unsetenv("TERN_CPU_ISA");
  EXPECT_EQ(select_isa(), isas().front());
}

// ---------------------------------------------------------------- igemm

// C = clamp(bias + sum_t A_t W_t) for one call, in double.
std::vector<double> ref_igemm(size_t mr, size_t nc, size_t kc, size_t ks, const std::vector<std::vector<float>>& rows,
                              const std::vector<float>& packed, size_t panel_floats, MinMax mm) {
  std::vector<double> c(mr * nc);
  for (size_t i = 0; i < mr; ++i) {
    for (size_t j = 0; j < nc; ++j) {
      const float* panel = packed.data() + (j / kPanel) * panel_floats;
      const size_t lane = j % kPanel;
      double s = panel[lane];
      for (size_t t = 0; t < ks; ++t) {
        for (size_t k = 0; k < kc; ++k) s += double(rows[t * mr + i][k]) * panel[kPanel * (1 + t * kc + k) + lane];
      }
      c[i * nc + j] = std::min<double>(std::max<double>(s, mm.min), mm.max);
    }
  }
  return c;
}

void check_igemm(const Isa& isa, const IgemmConfig& k, size_t mr, size_t nc, size_t kc, size_t ks, MinMax mm) {
  const size_t MR = size_t(k.mr), panels = (size_t(k.nr) + kPanel - 1) / kPanel;
  const size_t panel_floats = kPanel * (1 + ks * kc);
  std::vector<float> packed = random_floats(panels * panel_floats, 7 + unsigned(kc * 31 + ks));
  std::vector<std::vector<float>> rows;
  std::vector<const float*> ptrs(ks * MR);
  std::vector<float> zeros(kc, 0.f);
  for (size_t t = 0; t < ks; ++t) {
    for (size_t i = 0; i < MR; ++i) {
      rows.push_back((i + t) % 5 == 4 ? zeros : random_floats(kc, unsigned(100 + t * 13 + i)));  // some padding taps
    }
  }
  for (size_t t = 0; t < ks; ++t) {
    for (size_t i = 0; i < MR; ++i) ptrs[t * MR + i] = rows[t * MR + std::min(i, mr - 1)].data();
  }
  std::vector<std::vector<float>> used;
  for (size_t t = 0; t < ks; ++t) {
    for (size_t i = 0; i < mr; ++i) used.push_back(rows[t * MR + i]);
  }
  const size_t ldc = nc + 3;
  std::vector<float> c(mr * ldc + 8, 12345.f);
  // a residual laid out as c, for about half the calls (NaN past column
  // nc: only the first nc columns may reach the output)
  const bool with_res = (kc + ks + nc) % 2 == 1;
  std::vector<float> res = random_floats(mr * ldc + 8, unsigned(9 + nc));
  for (size_t i = 0; i < mr; ++i) {
    for (size_t j = nc; j < ldc; ++j) res[i * ldc + j] = NAN;
  }
  k.ukernel(mr, nc, kc, ks, ptrs.data(), packed.data(), panel_floats, c.data(), ldc, with_res ? res.data() : nullptr,
            mm);
  MinMax none = {-INFINITY, INFINITY};
  std::vector<double> want = ref_igemm(mr, nc, kc, ks, used, packed, panel_floats, with_res ? none : mm);
  for (size_t i = 0; i < mr; ++i) {
    for (size_t j = 0; j < nc && with_res; ++j) {
      want[i * nc + j] = std::min<double>(std::max<double>(want[i * nc + j] + res[i * ldc + j], mm.min), mm.max);
    }
  }
  for (size_t i = 0; i < mr; ++i) {
    for (size_t j = 0; j < nc; ++j) {
      ASSERT_NEAR(c[i * ldc + j], want[i * nc + j], 1e-4 * (1 + kc * ks) / 8)
          << isa.name << " mr=" << mr << " nc=" << nc << " kc=" << kc << " ks=" << ks << " res=" << with_res << " at "
          << i << "," << j;
    }
    for (size_t j = nc; j < ldc && i * ldc + j < c.size(); ++j) {
      ASSERT_EQ(c[i * ldc + j], 12345.f) << isa.name << ": wrote past column " << nc;
    }
  }
  for (size_t j = mr * ldc; j < c.size(); ++j) ASSERT_EQ(c[j], 12345.f) << isa.name << ": wrote past row " << mr;
}

TEST(CpuIgemm, test_every_isa_matches_reference_below_at_and_above_its_tile) {
  const MinMax none = {-INFINITY, INFINITY}, relu6 = {0.f, 6.f};
  for (const Isa* isa : isas()) {
    for (const IgemmConfig* k : {&isa->igemm_main, &isa->igemm_tail, &isa->igemm_row}) {
      for (size_t mr = 1; mr <= size_t(k->mr); ++mr) {
        for (size_t nc : {size_t(1), size_t(7), size_t(16), size_t(17), size_t(33), size_t(k->nr) - 1, size_t(k->nr)}) {
          if (nc == 0 || nc > size_t(k->nr)) continue;
          for (size_t kc : {1, 3, 16, 37}) {
            for (size_t ks : {1, 9}) check_igemm(*isa, *k, mr, nc, kc, ks, mr % 2 ? none : relu6);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- dwconv

TEST(CpuDwconv, test_every_isa_matches_reference_for_odd_channel_counts) {
  for (const Isa* isa : isas()) {
    for (size_t channels : {1, 7, 8, 16, 17, 40}) {
      for (size_t ks : {1, 9, 25}) {
        const size_t pixels = 5, blocks = (channels + kPanel - 1) / kPanel;
        std::vector<float> w = random_floats(blocks * kPanel * (1 + ks), unsigned(channels * 7 + ks));
        std::vector<std::vector<float>> inputs;
        std::vector<const float*> ptrs;
        std::vector<float> zeros(channels, 0.f);
        for (size_t p = 0; p < pixels; ++p) {
          for (size_t t = 0; t < ks; ++t) {
            inputs.push_back((p + t) % 4 == 3 ? zeros : random_floats(channels, unsigned(p * 100 + t)));
          }
        }
        for (const auto& v : inputs) ptrs.push_back(v.data());
        const size_t stride = channels + 5;
        std::vector<float> out(pixels * stride, -7.f);
        const MinMax mm = {-0.5f, 0.75f};
        isa->dwconv(channels, pixels, ks, ptrs.data(), w.data(), out.data(), stride, mm);
        for (size_t p = 0; p < pixels; ++p) {
          for (size_t ch = 0; ch < channels; ++ch) {
            const float* block = w.data() + (ch / kPanel) * kPanel * (1 + ks);
            double s = block[ch % kPanel];
            for (size_t t = 0; t < ks; ++t) s += double(ptrs[p * ks + t][ch]) * block[kPanel * (1 + t) + ch % kPanel];
            s = std::min<double>(std::max<double>(s, mm.min), mm.max);
            ASSERT_NEAR(out[p * stride + ch], s, 1e-5) << isa->name << " channels=" << channels << " ks=" << ks;
          }
          for (size_t ch = channels; ch < stride; ++ch) ASSERT_EQ(out[p * stride + ch], -7.f) << isa->name;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- activations

TEST(CpuVact, test_every_isa_matches_libm_over_the_whole_float_range) {
  std::vector<float> xs;
  for (float x = -100.f; x <= 100.f; x += 0.0371f) xs.push_back(x);
  for (float x : {0.f, -0.f, 1e-30f, -1e-30f, 1e-6f, 87.f, 88.f, 89.f, -87.f, -104.f, 1e30f, -1e30f}) xs.push_back(x);
  auto want = [](int kind, double x) {
    switch (kind) {
      case 0: return 1 / (1 + std::exp(-x));
      case 1: return std::tanh(x);
      case 2: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      case 3: return x / (1 + std::exp(-x));
      case 4: return x <= 88 ? std::exp(x) : std::exp(88.0);  // exp saturates at exp(88)
      default: return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;  // hardswish
    }
  };
  for (const Isa* isa : isas()) {
    for (int kind = 0; kind < 6; ++kind) {
      for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(17), size_t(33)}) {  // short rows: tails
        std::vector<float> head(xs.begin() + 100, xs.begin() + 100 + n + 1), out = head;
        isa->vact(kind, out.data(), n);
        ASSERT_EQ(out[n], head[n]) << isa->name << " kind " << kind << ": wrote past " << n;
        for (size_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], want(kind, head[i]), 1e-5 * (1 + std::fabs(head[i])));
      }
      float nan = NAN;
      isa->vact(kind, &nan, 1);
      ASSERT_TRUE(std::isnan(nan)) << isa->name << " kind " << kind << ": NaN in, NaN out";
      std::vector<float> v = xs;
      isa->vact(kind, v.data(), v.size());
      for (size_t i = 0; i < xs.size(); ++i) {
        const double w = want(kind, xs[i]);
        if (kind == 4) {
          ASSERT_NEAR(v[i], w, 3e-7 * w + 1e-37) << isa->name << " exp x=" << xs[i];
          continue;
        }
        ASSERT_NEAR(v[i], w, 2e-6 * (1 + std::fabs(w))) << isa->name << " kind " << kind << " x=" << xs[i];
      }
    }
  }
}

// ---------------------------------------------------------------- run_conv

struct Case {
  int64_t n, h, w, c, oc;
  int32_t k, s, p, d;
  bool depthwise, bias, residual;
  Activation act;
};

// NHWC convolution + bias + residual + activation in double.
std::vector<double> ref_conv(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& wt,
                             const std::vector<float>& bias, const float* residual, const Epilogue& ep) {
  std::vector<double> y(size_t(g.n * g.oh * g.ow * g.oc));
  const int64_t cg = g.depthwise ? 1 : g.c;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t o = 0; o < g.oc; ++o) {
          double s = bias.empty() ? 0.0 : bias[o];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int32_t ki = 0; ki < g.kh; ++ki)
              for (int32_t kj = 0; kj < g.kw; ++kj) {
                const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const int64_t ch = g.depthwise ? o : ci;
                s += double(x[((b * g.h + iy) * g.w + ix) * g.c + ch]) * wt[((o * cg + ci) * g.kh + ki) * g.kw + kj];
              }
          const size_t at = size_t(((b * g.oh + oy) * g.ow + ox) * g.oc + o);
          if (residual) s += residual[at];
          if (ep.activation == Activation::Clamp) s = std::min<double>(std::max<double>(s, ep.clamp.min), ep.clamp.max);
          if (ep.activation == Activation::Hardswish) s = s * std::min(std::max(s + 3, 0.0), 6.0) / 6;
          y[at] = s;
        }
  return y;
}

ConvGeometry geometry(const Case& cs) {
  ConvGeometry g{};
  g.n = cs.n, g.h = cs.h, g.w = cs.w, g.c = cs.c, g.oc = cs.depthwise ? cs.c : cs.oc;
  g.kh = g.kw = cs.k, g.sh = g.sw = cs.s, g.ph = g.pw = cs.p, g.dh = g.dw = cs.d;
  g.oh = (cs.h + 2 * cs.p - cs.d * (cs.k - 1) - 1) / cs.s + 1;
  g.ow = (cs.w + 2 * cs.p - cs.d * (cs.k - 1) - 1) / cs.s + 1;
  g.depthwise = cs.depthwise;
  return g;
}

std::vector<float> run(const ConvGeometry& g, const Isa& isa, const std::vector<float>& x, const std::vector<float>& packed,
                       const float* residual, const Epilogue& ep, int threads) {
  static ThreadPool pool;
  EXPECT_EQ(pool.reserve(3), Error::Ok);
  const size_t per = (conv_scratch_bytes(g, isa) + 63) & ~size_t(63);
  std::vector<uint8_t> scratch(per * threads + 64);
  void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  std::vector<float> zeros(conv_zero_floats(g), 0.f), y(size_t(g.n * g.oh * g.ow * g.oc), NAN);
  RunContext ctx(nullptr, base, per, threads, per, threads > 1 ? &pool : nullptr);
  run_conv(g, isa, x.data(), packed.data(), zeros.data(), residual, y.data(), ep, ctx);
  return y;
}

TEST(CpuConv, test_every_isa_matches_reference_and_threads_give_the_same_bits) {
  const Case cases[] = {
      // n  h   w   c  oc  k  s  p  d  dw     bias   resid  act
      {1, 8, 8, 3, 16, 3, 1, 1, 1, false, true, false, Activation::Clamp},      // first layer, relu6
      {2, 9, 7, 5, 33, 3, 2, 1, 1, false, true, true, Activation::Clamp},       // stride 2 + residual + relu
      {1, 14, 14, 24, 40, 1, 1, 0, 1, false, true, true, Activation::None},     // pointwise + residual
      {1, 11, 13, 17, 17, 3, 1, 2, 2, false, false, false, Activation::Hardswish},  // dilation 2
      {1, 16, 16, 3, 8, 7, 2, 3, 1, false, true, false, Activation::Clamp},     // 7x7 stem
      {1, 17, 15, 40, 40, 3, 1, 1, 1, true, true, false, Activation::Clamp},    // depthwise
      {2, 12, 12, 33, 33, 3, 2, 1, 1, true, true, true, Activation::None},      // depthwise s2 + residual
      {1, 9, 9, 20, 20, 5, 1, 2, 1, true, false, false, Activation::Hardswish}, // depthwise 5x5
      {1, 13, 12, 24, 24, 3, 1, 2, 2, true, true, false, Activation::Clamp},    // depthwise dilated
      {2, 3, 2, 18, 18, 5, 1, 2, 1, true, true, false, Activation::None},       // depthwise, no interior column
      {5, 1, 1, 70, 45, 1, 1, 0, 1, false, true, false, Activation::None},      // linear, batch 5
      {1, 24, 24, 32, 64, 1, 1, 0, 1, false, true, false, Activation::Clamp},   // splits over threads
      // wide rows: tiles inside one output row take pointers by stride
      {1, 5, 41, 3, 16, 3, 2, 1, 1, false, true, false, Activation::Hardswish}, // stem, tiles cross rows
      {2, 4, 37, 8, 40, 3, 1, 1, 1, false, true, true, Activation::Clamp},      // 3x3 s1, residual
      {1, 6, 41, 5, 12, 3, 1, 2, 2, false, false, false, Activation::None},     // dilated: per-tap pointers
      {1, 6, 30, 16, 24, 1, 2, 0, 1, false, true, false, Activation::None},     // 1x1 stride 2
      // few output pixels: the GEMV row kernel (run_rows)
      {1, 1, 1, 256, 770, 1, 1, 0, 1, false, true, true, Activation::None},     // linear, one row, over threads
      {2, 1, 1, 37, 45, 1, 1, 0, 1, false, false, false, Activation::Hardswish},  // two rows
      {1, 3, 3, 19, 70, 3, 1, 0, 1, false, true, false, Activation::Clamp},     // 3x3 conv to one pixel
      {1, 4, 3, 8, 20, 3, 2, 1, 1, false, true, true, Activation::Clamp},       // 2x2 pixels, padded taps
  };
  for (const Case& cs : cases) {
    const ConvGeometry g = geometry(cs);
    const int64_t cg = cs.depthwise ? 1 : g.c;
    std::vector<float> x = random_floats(size_t(g.n * g.h * g.w * g.c), 1);
    std::vector<float> wt = random_floats(size_t(g.oc * cg * g.kh * g.kw), 2);
    std::vector<float> bias = cs.bias ? random_floats(size_t(g.oc), 3) : std::vector<float>();
    std::vector<float> res = random_floats(size_t(g.n * g.oh * g.ow * g.oc), 4);
    std::vector<float> packed(conv_packed_floats(g));
    pack_conv_weights(g, wt.data(), cs.bias ? bias.data() : nullptr, packed.data());
    Epilogue ep;
    ep.activation = cs.act;
    if (cs.act == Activation::Clamp) ep.clamp = {0.f, cs.residual ? INFINITY : 6.f};
    const float* residual = cs.residual ? res.data() : nullptr;
    std::vector<double> want = ref_conv(g, x, wt, bias, residual, ep);
    for (const Isa* isa : isas()) {
      std::vector<float> one = run(g, *isa, x, packed, residual, ep, 1);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(one[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << isa->name << " case c=" << cs.c << " k=" << cs.k
                                                                        << " dw=" << cs.depthwise << " at " << i;
      }
      for (int threads : {2, 3}) {
        std::vector<float> many = run(g, *isa, x, packed, residual, ep, threads);
        ASSERT_EQ(0, memcmp(one.data(), many.data(), one.size() * sizeof(float)))
            << isa->name << ": " << threads << " threads differ from 1, case c=" << cs.c << " k=" << cs.k;
      }
    }
  }
}

// ---------------------------------------------------------------- run_conv_chain

// One convolution of a chain test: its geometry, packed weights, residual.
struct Stage {
  ConvGeometry g;
  std::vector<float> packed, residual;
  Epilogue ep;
};

Stage make_stage(const Case& cs, uint32_t seed) {
  Stage st{geometry(cs), {}, {}, {}};
  const int64_t cg = cs.depthwise ? 1 : st.g.c;
  std::vector<float> wt = random_floats(size_t(st.g.oc * cg * st.g.kh * st.g.kw), seed);
  std::vector<float> bias = random_floats(size_t(st.g.oc), seed + 1);
  st.packed.resize(conv_packed_floats(st.g));
  pack_conv_weights(st.g, wt.data(), bias.data(), st.packed.data());
  if (cs.residual) st.residual = random_floats(size_t(st.g.n * st.g.oh * st.g.ow * st.g.oc), seed + 2);
  st.ep.activation = cs.act;
  if (cs.act == Activation::Clamp) st.ep.clamp = {0.f, 6.f};
  return st;
}

// A pointwise expansion, a depthwise convolution and (count 3) a pointwise
// projection run as a chain give the bits run_conv gives stage by stage, on
// every ISA and for 1, 2 and 3 threads: images, strides, 3x3 and 5x5,
// dilation, residuals on the depthwise and the projection, rows shorter
// and longer than a tile, odd channel counts.
TEST(CpuConvChain, test_a_chain_gives_the_bits_of_its_stages_run_one_by_one) {
  struct ChainCase {
    int64_t n, h, w, c, e, out;
    int32_t k, s, d;
    int count;
    bool dw_residual, out_residual;
    Activation act;
  };
  const ChainCase cases[] = {
      // n  h   w   c  e   out k  s  d  count dw_res out_res act
      {1, 9, 7, 8, 24, 8, 3, 1, 1, 3, false, true, Activation::Clamp},       // inverted residual block
      {2, 13, 11, 5, 40, 12, 3, 2, 1, 3, false, false, Activation::Clamp},   // stride 2, two images
      {1, 12, 30, 16, 36, 16, 5, 1, 1, 3, false, true, Activation::Hardswish},  // 5x5, rows past a tile
      {1, 10, 9, 7, 17, 0, 5, 2, 1, 2, false, false, Activation::Hardswish},  // no projection
      {1, 11, 12, 6, 20, 0, 3, 1, 2, 2, true, false, Activation::None},      // dilation 2, depthwise residual
      {3, 4, 70, 3, 33, 9, 3, 1, 1, 3, false, true, Activation::Silu},       // wide rows, few of them
      {1, 1, 5, 4, 16, 5, 3, 1, 1, 3, false, false, Activation::Clamp},      // one row
  };
  for (const ChainCase& cc : cases) {
    const int32_t pad = cc.d * (cc.k / 2);
    Stage st[3] = {
        make_stage({cc.n, cc.h, cc.w, cc.c, cc.e, 1, 1, 0, 1, false, true, false, cc.act}, 10),
        make_stage({cc.n, cc.h, cc.w, cc.e, cc.e, cc.k, cc.s, pad, cc.d, true, true, cc.dw_residual, cc.act}, 20),
        {},
    };
    if (cc.count == 3) {
      const ConvGeometry& d = st[1].g;
      st[2] = make_stage({cc.n, d.oh, d.ow, cc.e, cc.out, 1, 1, 0, 1, false, true, cc.out_residual, Activation::None},
                         30);
    }
    const ConvGeometry& last = st[cc.count - 1].g;
    std::vector<float> x = random_floats(size_t(cc.n * cc.h * cc.w * cc.c), 1);
    std::vector<float> zeros(std::max(conv_zero_floats(st[0].g), conv_zero_floats(st[1].g)), 0.f);
    for (const Isa* isa : isas()) {
      for (int i = 0; i < cc.count; ++i) st[i].ep.vact = isa->vact;
      // stage by stage, each over its own tensor
      std::vector<float> cur = x;
      for (int i = 0; i < cc.count; ++i) {
        cur = run(st[i].g, *isa, cur, st[i].packed, st[i].residual.empty() ? nullptr : st[i].residual.data(), st[i].ep, 1);
      }
      ConvStage stages[3];
      for (int i = 0; i < cc.count; ++i) {
        stages[i] = {st[i].g, st[i].packed.data(), st[i].residual.empty() ? nullptr : st[i].residual.data(), st[i].ep};
      }
      static ThreadPool pool;
      ASSERT_EQ(pool.reserve(3), Error::Ok);
      for (int threads : {1, 2, 3}) {
        const size_t per = (conv_chain_scratch_bytes(stages, cc.count, *isa) + 63) & ~size_t(63);
        std::vector<uint8_t> scratch(per * threads + 64);
        void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
        RunContext ctx(nullptr, base, per, threads, per, threads > 1 ? &pool : nullptr);
        std::vector<float> y(size_t(last.n * last.oh * last.ow * last.oc), NAN);
        run_conv_chain(stages, cc.count, *isa, x.data(), zeros.data(), y.data(), ctx);
        ASSERT_EQ(0, memcmp(y.data(), cur.data(), y.size() * sizeof(float)))
            << isa->name << ", " << threads << " threads: the chain differs from its stages (e=" << cc.e
            << " k=" << cc.k << " s=" << cc.s << " count=" << cc.count << ")";
      }
    }
  }
}

// ---------------------------------------------------------------- run_pool

// Max and average pooling on every ISA against a reference in double:
// padding (counted in the average or not), strides, a NaN (wins a max), rows
// of more than one microkernel call, and a window too wide for it (a mean
// over a whole image).
TEST(CpuPool, test_every_isa_matches_reference_for_max_and_average) {
  struct PoolCase {
    int64_t n, h, w, c;
    int32_t k, s, p;
    bool max, count_padding;
  };
  const PoolCase cases[] = {
      {1, 13, 11, 64, 3, 2, 1, true, false},    // resnet's stem pool
      {2, 9, 8, 17, 3, 1, 1, false, true},      // average, padding counted
      {1, 7, 10, 5, 3, 2, 1, false, false},     // average, padding not counted
      {1, 6, 150, 8, 2, 2, 0, true, false},     // 75 pixels a row: two calls
      {1, 40, 40, 3, 40, 1, 0, false, false},   // 1600 taps: the wide path
  };
  for (const PoolCase& pc : cases) {
    PoolGeometry g{};
    g.n = pc.n, g.h = pc.h, g.w = pc.w, g.c = pc.c, g.kh = g.kw = pc.k, g.sh = g.sw = pc.s, g.ph = g.pw = pc.p;
    g.oh = (pc.h + 2 * pc.p - pc.k) / pc.s + 1, g.ow = (pc.w + 2 * pc.p - pc.k) / pc.s + 1;
    g.max = pc.max, g.count_padding = pc.count_padding;
    std::vector<float> x = random_floats(size_t(g.n * g.h * g.w * g.c), 7);
    x[size_t(g.c) + 1] = NAN;  // pixel (0, 0, 1), channel 1
    std::vector<double> want(size_t(g.n * g.oh * g.ow * g.c));
    for (int64_t b = 0; b < g.n; ++b)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox)
          for (int64_t ch = 0; ch < g.c; ++ch) {
            double acc = g.max ? -INFINITY : 0;
            int64_t count = 0;
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj) {
                const int64_t iy = oy * g.sh - g.ph + ki, ix = ox * g.sw - g.pw + kj;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const double v = x[size_t(((b * g.h + iy) * g.w + ix) * g.c + ch)];
                ++count;
                acc = g.max ? (std::isnan(v) || std::isnan(acc) ? NAN : std::max(acc, v)) : acc + v;
              }
            if (!g.max) acc /= double(g.count_padding ? int64_t(g.kh) * g.kw : count);
            want[size_t(((b * g.oh + oy) * g.ow + ox) * g.c + ch)] = acc;
          }
    std::vector<float> zeros(size_t(g.c), 0.f);
    for (const Isa* isa : isas()) {
      std::vector<uint8_t> scratch(pool_scratch_bytes(g) + 64);
      RunContext ctx(nullptr, scratch.data(), scratch.size());
      std::vector<float> y(want.size(), -1.f);
      run_pool(g, *isa, zeros.data(), x.data(), y.data(), ctx);
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(y[i])) << isa->name << " at " << i << ": a NaN in the window";
        } else {
          ASSERT_NEAR(y[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << isa->name << " k=" << pc.k << " at " << i;
        }
      }
    }
  }
}

// Winograd weights computed at load (cpu.fbs Conv.winograd_element): each
// element t of G g G^T, computed here in double, packed as a 1x1
// convolution's weights by pack_conv_weights (zero bias), is what
// pack_winograd_weights writes at element t, within float rounding of the
// kernel's scale; lanes past oc (a last partial panel) and bias rows zero.
TEST(CpuWinograd, test_weights_transformed_at_load_are_each_element_of_g_g_gt_packed) {
  const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (const auto& [c, oc] : std::vector<std::pair<int, int>>{{1, 1}, {5, 19}, {16, 16}, {33, 40}}) {
    const std::vector<float> wt = random_floats(size_t(oc * c * 9), 11);
    const size_t element = winograd_element_floats(c, oc);
    std::vector<float> got(16 * element, NAN);
    pack_winograd_weights(c, oc, wt.data(), got.data());
    ConvGeometry g{};
    g.n = g.h = g.w = g.oh = g.ow = 1, g.c = c, g.oc = oc, g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
    ASSERT_EQ(conv_packed_floats(g), element);
    double scale = 0;
    for (float v : wt) scale = std::max(scale, double(std::fabs(v)));
    for (int t = 0; t < 16; ++t) {
      std::vector<float> u(size_t(oc * c));  // [oc][c][1][1], rounded from double
      for (int o = 0; o < oc; ++o)
        for (int k = 0; k < c; ++k) {
          double sum = 0;
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) sum += G[t / 4][a] * wt[size_t(((o * c + k) * 3 + a) * 3 + b)] * G[t % 4][b];
          u[size_t(o * c + k)] = float(sum);
        }
      std::vector<float> want(element, NAN);
      pack_conv_weights(g, u.data(), nullptr, want.data());
      const size_t panel_floats = size_t(kPanel) * (1 + size_t(c));
      for (size_t i = 0; i < element; ++i) {
        const size_t in_panel = i % panel_floats, channel = i / panel_floats * kPanel + in_panel % kPanel;
        const float v = got[t * element + i];
        if (in_panel < size_t(kPanel) || channel >= size_t(oc)) {
          ASSERT_EQ(v, 0.f) << "c=" << c << " oc=" << oc << " element " << t << ": bias row or lane past oc, " << i;
        } else {
          ASSERT_NEAR(v, want[i], 1e-6 * scale) << "c=" << c << " oc=" << oc << " element " << t << " packed float " << i;
        }
      }
    }
  }
}

// Winograd F(2x2, 3x3) transforms: one tile through isa.winograd_in, the
// elementwise products with G g G^T (in double, here), isa.winograd_out,
// against the direct 3x3 convolution of the 4x4 patch in double.
TEST(CpuWinograd, test_every_isa_transforms_a_tile_into_the_direct_convolution) {
  const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (int c : {1, 16, 21, 40}) {
    const int oc = c == 16 ? 16 : c + 3;
    std::vector<float> patch = random_floats(size_t(16 * c), 5), wt = random_floats(size_t(oc * c * 9), 6);
    std::vector<float> bias = random_floats(size_t(oc), 7), res = random_floats(size_t(4 * oc), 8);
    // U[t][o][k] = (G g G^T)[t] of kernel (o, k)
    std::vector<double> u(size_t(16 * oc * c));
    for (int o = 0; o < oc; ++o)
      for (int k = 0; k < c; ++k)
        for (int i = 0; i < 4; ++i)
          for (int l = 0; l < 4; ++l) {
            double sum = 0;
            for (int a = 0; a < 3; ++a)
              for (int b = 0; b < 3; ++b) sum += G[i][a] * wt[((o * c + k) * 3 + a) * 3 + b] * G[l][b];
            u[size_t(((i * 4 + l) * oc + o) * c + k)] = sum;
          }
    const MinMax clamp = {-0.5f, 2.f};
    for (const Isa* isa : isas()) {
      const float* in[16];
      for (int t = 0; t < 16; ++t) in[t] = patch.data() + t * c;
      const size_t vs = size_t(c) + 5, ms = size_t(oc) + 3;  // strides between the 16 rows
      std::vector<float> v(16 * vs, NAN), m(16 * ms, NAN), y(size_t(4 * oc), NAN);
      isa->winograd_in(in, size_t(c), v.data(), vs);
      for (int t = 0; t < 16; ++t)
        for (int o = 0; o < oc; ++o) {
          double sum = 0;
          for (int k = 0; k < c; ++k) sum += u[size_t((t * oc + o) * c + k)] * v[t * vs + size_t(k)];
          m[t * ms + size_t(o)] = float(sum);
        }
      float* out[4];
      const float* rp[4];
      for (int p = 0; p < 4; ++p) out[p] = y.data() + p * oc, rp[p] = res.data() + p * oc;
      isa->winograd_out(m.data(), ms, size_t(oc), bias.data(), out, rp, clamp);
      for (int p = 0; p < 4; ++p)
        for (int o = 0; o < oc; ++o) {
          double want = double(bias[o]) + res[size_t(p * oc + o)];
          for (int k = 0; k < c; ++k)
            for (int a = 0; a < 3; ++a)
              for (int b = 0; b < 3; ++b)
                want += double(patch[size_t(((p / 2 + a) * 4 + p % 2 + b) * c + k)]) * wt[((o * c + k) * 3 + a) * 3 + b];
          want = std::min<double>(std::max<double>(want, clamp.min), clamp.max);
          ASSERT_NEAR(y[size_t(p * oc + o)], want, 1e-4 * (1 + std::fabs(want)))
              << isa->name << " c=" << c << " pixel " << p << " channel " << o;
        }
    }
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tern
