// The cpu backend's block-quantized microkernels (backends/cpu/ukernels/qb.h):
// GGUF's Q4_0, Q4_1 and Q8_0 rows times activations quantized to int8
// blocks of 32. Every kernel set this build and CPU have must write the
// bits of the definition in qb.h, which this file computes again on its own
// (reference below, from the format table, not from the kernels), for the
// quantized rows and for every product; and the products must be within
// the error the activations' quantization allows of dequantize(w) . x,
// computed in double. Sizes: k of 1 to 48 blocks (tails of the 8-block
// groups), n not a multiple of any tile, m across the mr-row tiles; data
// with zero blocks, subnormal and huge scales, extreme bytes (-128).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/ukernels/qb.h"

namespace tern {
namespace cpu {
namespace {

const int kFormats[3] = {kQbQ4_0, kQbQ4_1, kQbQ8_0};
const char* const kFormatNames[3] = {"Q4_0", "Q4_1", "Q8_0"};
const size_t kBytes[3] = {18, 20, 34};

// ---- the reference, from qb.h's definition

float half_ref(const uint8_t* p) {
  const int h = p[0] | p[1] << 8;
  const int e = (h >> 10) & 31, m = h & 1023;
  float f = e == 0 ? std::ldexp(float(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(float(1024 + m), e - 25);
  return (h & 0x8000) ? -f : f;
}

struct QRow {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> s;
};

QRow quantize_ref(const float* x, size_t k) {
  QRow r;
  for (size_t b = 0; b < k / 32; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[32 * b + j]) > amax) amax = std::fabs(x[32 * b + j]);
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) {
      const float v = x[32 * b + j] * id;
      const float c = std::isnan(v) || v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
      const int8_t q = int8_t(std::nearbyint(c));
      r.q.push_back(q);
      s += q;
    }
    r.d.push_back(d);
    r.s.push_back(s);
  }
  return r;
}

// Weight element j of block blk (w_q as the definition has it), its d and m.
int wq(int f, const uint8_t* blk, int j) {
  if (f == kQbQ8_0) return int8_t(blk[2 + j]);
  const uint8_t byte = blk[(f == kQbQ4_1 ? 4 : 2) + j % 16];
  const int nib = j < 16 ? byte & 15 : byte >> 4;
  return f == kQbQ4_0 ? nib - 8 : nib;
}

float dot_ref(int f, const uint8_t* w, const QRow& a, size_t k) {
  float acc[8] = {};
  for (size_t b = 0; b < k / 32; ++b) {
    const uint8_t* blk = w + b * kBytes[f];
    int32_t isum = 0;
    for (int j = 0; j < 32; ++j) isum += wq(f, blk, j) * a.q[32 * b + j];
    float t = (half_ref(blk) * a.d[b]) * float(isum);
    if (f == kQbQ4_1) {
      const float ms = a.d[b] * float(a.s[b]);
      t = t + half_ref(blk + 2) * ms;
    }
    acc[b % 8] = acc[b % 8] + t;
  }
  const float lo = (acc[0] + acc[4]) + (acc[2] + acc[6]), hi = (acc[1] + acc[5]) + (acc[3] + acc[7]);
  return lo + hi;
}

// ---- data

// A half: zero, subnormal, huge or (mostly) moderate, either sign.
uint16_t random_half(std::mt19937& rng, bool extreme) {
  const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
  const uint16_t m = uint16_t(rng() & 1023);
  switch (extreme ? rng() % 6 : 5) {
    case 0: return sign;                            // zero, +-0
    case 1: return sign | m;                        // subnormal
    case 2: return uint16_t(sign | 30 << 10 | m);  // 32768 .. 65504
    default: return uint16_t(sign | (8 + rng() % 8) << 10 | m);  // 2^-7 .. 2^0
  }
}

std::vector<uint8_t> random_rows(int f, size_t n, size_t k, std::mt19937& rng, bool extreme) {
  std::vector<uint8_t> w(n * (k / 32) * kBytes[f]);
  for (auto& v : w) v = uint8_t(rng());
  for (size_t b = 0; b < n * (k / 32); ++b) {
    uint8_t* blk = w.data() + b * kBytes[f];
    const uint16_t d = random_half(rng, extreme), m = random_half(rng, extreme);
    memcpy(blk, &d, 2);
    if (f == kQbQ4_1) memcpy(blk + 2, &m, 2);
    if (extreme && f == kQbQ8_0 && b % 5 == 0) memset(blk + 2, 0x80, 32);  // -128 everywhere
  }
  return w;
}

std::vector<float> random_x(size_t m, size_t k, std::mt19937& rng, bool extreme) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(m * k);
  for (auto& v : x) v = normal(rng);
  for (size_t b = 0; b < m * k / 32; ++b) {
    float* blk = x.data() + 32 * b;
    switch (rng() % 7) {
      case 0: memset(blk, 0, 32 * sizeof(float)); break;  // a zero block
      case 1: blk[rng() % 32] = -50.0f; break;             // one large value (the scale), negative
      case 2:                                              // small integers: exact halfway products
        for (int j = 0; j < 32; ++j) blk[j] = float(int(rng() % 255) - 127) / 2.0f;
        break;
      case 3:
        if (extreme) {
          for (int j = 0; j < 32; ++j) blk[j] *= (j % 3 == 0) ? 1e30f : 1e-30f;
        }
        break;
      default: break;
    }
  }
  return x;
}

std::vector<const QbKernels*> kernel_sets() {
  const QbKernels* sets[kMaxKernelSets];
  const int n = supported_qb_kernels(sets, kMaxKernelSets);
  return std::vector<const QbKernels*>(sets, sets + n);
}

bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return x == y;
}

// Runs set ks: x quantized row by row, the product in calls of up to ks.mr rows.
std::vector<float> run(const QbKernels& ks, int f, const std::vector<float>& x, const std::vector<uint8_t>& w,
                       size_t m, size_t n, size_t k, std::vector<uint8_t>* rows) {
  const size_t rb = qb_row_bytes(k);
  rows->assign(m * rb, 0xAB);  // not zeros: the kernel writes the padding
  for (size_t i = 0; i < m; ++i) ks.quantize(k, x.data() + i * k, rows->data() + i * rb);
  std::vector<float> y(m * n, NAN);
  const size_t wrb = k / 32 * kBytes[f];
  for (size_t i = 0; i < m; i += size_t(ks.mr)) {
    const size_t mr = m - i < size_t(ks.mr) ? m - i : size_t(ks.mr);
    ks.gemm[f](mr, n, k, rows->data() + i * rb, rb, w.data(), wrb, y.data() + i * n, n);
  }
  return y;
}

// The same product through the set's tiles of 16 rows (if it has them).
std::vector<float> run_tiles(const QbKernels& ks, int f, const std::vector<uint8_t>& rows, const std::vector<uint8_t>& w,
                             size_t m, size_t n, size_t k) {
  const size_t rb = qb_row_bytes(k), wrb = k / 32 * kBytes[f];
  std::vector<uint8_t> tile(qb_tile_bytes(k) + 64);
  uint8_t* t = tile.data() + (64 - reinterpret_cast<uintptr_t>(tile.data()) % 64) % 64;  // 64-byte aligned
  std::vector<float> y(m * n, NAN);
  for (size_t i = 0; i < m; i += kQbTileRows) {
    const size_t mr = m - i < kQbTileRows ? m - i : kQbTileRows;
    ks.pack_tile(mr, k, rows.data() + i * rb, rb, t);
    ks.gemm_tile[f](mr, n, k, t, w.data(), wrb, y.data() + i * n, n);
  }
  return y;
}

void check_quantized(const QbKernels& ks, const std::vector<uint8_t>& rows, const std::vector<float>& x, size_t m,
                     size_t k, const std::string& what) {
  const size_t rb = qb_row_bytes(k), nb = k / 32;
  for (size_t i = 0; i < m; ++i) {
    const QRow r = quantize_ref(x.data() + i * k, k);
    std::vector<uint8_t> want(rb, 0);
    memcpy(want.data(), r.q.data(), k);
    memcpy(want.data() + k, r.d.data(), 4 * nb);
    memcpy(want.data() + k + 4 * nb, r.s.data(), 4 * nb);
    ASSERT_EQ(memcmp(want.data(), rows.data() + i * rb, rb), 0) << ks.name << " quantize, row " << i << ", " << what;
  }
}

struct Shape {
  size_t m, n, k;
};

void check_case(int f, const Shape& s, bool extreme, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<uint8_t> w = random_rows(f, s.n, s.k, rng, extreme);
  const std::vector<float> x = random_x(s.m, s.k, rng, extreme);
  char what[96];
  snprintf(what, sizeof(what), "%s m=%zu n=%zu k=%zu%s", kFormatNames[f], s.m, s.n, s.k, extreme ? " extreme" : "");
  const size_t wrb = s.k / 32 * kBytes[f];
  std::vector<QRow> q;
  for (size_t i = 0; i < s.m; ++i) q.push_back(quantize_ref(x.data() + i * s.k, s.k));
  for (const QbKernels* ks : kernel_sets()) {
    std::vector<uint8_t> rows;
    const std::vector<float> y = run(*ks, f, x, w, s.m, s.n, s.k, &rows);
    check_quantized(*ks, rows, x, s.m, s.k, what);
    if (ks->pack_tile != nullptr) {  // the tiles give the same bits
      const std::vector<float> yt = run_tiles(*ks, f, rows, w, s.m, s.n, s.k);
      for (size_t i = 0; i < yt.size(); ++i) {
        ASSERT_TRUE(same_bits(yt[i], y[i])) << ks->name << " tiles " << what << " at " << i << ": " << yt[i]
                                            << ", the gemm kernel " << y[i];
      }
    }
    for (size_t i = 0; i < s.m; ++i) {
      for (size_t j = 0; j < s.n; ++j) {
        const float want = dot_ref(f, w.data() + j * wrb, q[i], s.k);
        ASSERT_TRUE(same_bits(y[i * s.n + j], want))
            << ks->name << " " << what << " y[" << i << "][" << j << "] = " << y[i * s.n + j] << ", the definition "
            << want;
      }
    }
    if (extreme) continue;
    // dequantize(w) . x in double, within what rounding x to q8 blocks allows:
    // |x - d q| <= d / 2 per element, plus float rounding of the sums
    for (size_t i = 0; i < s.m; ++i) {
      for (size_t j = 0; j < s.n; ++j) {
        double exact = 0, bound = 0, mag = 0;
        for (size_t b = 0; b < s.k / 32; ++b) {
          const uint8_t* blk = w.data() + j * wrb + b * kBytes[f];
          const double dw = half_ref(blk), mw = f == kQbQ4_1 ? half_ref(blk + 2) : 0.0;
          double wabs = 0;
          for (int t = 0; t < 32; ++t) {
            const double wv = dw * wq(f, blk, t) + mw, xv = x[i * s.k + 32 * b + size_t(t)];
            exact += wv * xv;
            wabs += std::fabs(wv);
            mag += std::fabs(wv * xv);
          }
          bound += 0.5 * q[i].d[b] * wabs;
        }
        const double err = std::fabs(double(y[i * s.n + j]) - exact);
        ASSERT_LE(err, 1.001 * bound + 1e-5 * mag + 1e-30)
            << ks->name << " " << what << " y[" << i << "][" << j << "] = " << y[i * s.n + j] << ", exact " << exact;
      }
    }
  }
}

TEST(CpuBlockLinear, EveryKernelSetIsTested) {
  const std::vector<const QbKernels*> sets = kernel_sets();
  ASSERT_FALSE(sets.empty());
  EXPECT_STREQ(sets.back()->name, "scalar");
  for (const QbKernels* ks : sets) {
    EXPECT_GE(ks->mr, 1);
    EXPECT_LE(ks->mr, 4);
    printf("qb kernels: %s%s\n", ks->name, ks->pack_tile ? " (with tiles of 16 rows)" : "");
  }
}

TEST(CpuBlockLinear, EveryIsaWritesTheDefinitionsBitsAndIsNearTheExactProduct) {
  const size_t ks[] = {32, 64, 576, 1536};
  const Shape shapes[] = {{1, 1, 0}, {1, 17, 0}, {2, 3, 0}, {5, 67, 0}, {8, 17, 0}, {33, 3, 0}, {1, 1000, 0}};
  uint32_t seed = 1;
  for (int f : kFormats) {
    for (size_t k : ks) {
      for (Shape s : shapes) {
        s.k = k;
        if (s.n * s.m * k > (size_t(1) << 22)) continue;  // the double reference's time
        check_case(f, s, false, seed++);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(CpuBlockLinear, EveryIsaWritesTheDefinitionsBitsOnExtremeData) {
  // every group tail (1 to 8 blocks past the last full group) and beyond
  for (int f : kFormats) {
    for (size_t blocks : {1, 2, 3, 5, 7, 8, 9, 15, 16, 18, 23, 48}) {
      check_case(f, Shape{5, 13, 32 * blocks}, true, uint32_t(1000 + blocks));
      check_case(f, Shape{1, 3, 32 * blocks}, true, uint32_t(2000 + blocks));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(CpuBlockLinear, NanAndInfinityActivationsGiveTheSameBitsOnEveryIsa) {
  std::mt19937 rng(7);
  const size_t k = 96, n = 5;
  std::vector<float> x = random_x(2, k, rng, false);
  x[3] = NAN, x[40] = INFINITY, x[97] = -INFINITY, x[130] = NAN;
  for (int f : kFormats) {
    const std::vector<uint8_t> w = random_rows(f, n, k, rng, false);
    std::vector<uint8_t> want_rows;
    const std::vector<float> want = run(*kernel_sets().back(), f, x, w, 2, n, k, &want_rows);
    for (const QbKernels* ks : kernel_sets()) {
      std::vector<uint8_t> rows;
      const std::vector<float> y = run(*ks, f, x, w, 2, n, k, &rows);
      EXPECT_EQ(rows, want_rows) << ks->name;
      for (size_t i = 0; i < y.size(); ++i) EXPECT_TRUE(same_bits(y[i], want[i])) << ks->name << " " << i;
    }
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tern
