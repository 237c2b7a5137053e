// Tests of the portable aten::scaled_dot_product_attention kernel
// (kernels/portable/op_scaled_dot_product_attention.cpp). Expected values come
// from the naive double-precision loops below, written from torch's
// definition, never from the kernel. KernelHarness::call runs every case with
// 1, 2 and 3 threads and checks the bits agree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/cpp/random_util.h"
#include "extension/heap_allocator.h"
#include "tests/cpp/compare.h"
#include "tests/cpp/kernel_test_util.h"

namespace tern {
namespace {

using test::KernelHarness;

constexpr const char* kOp = "aten::scaled_dot_product_attention";

using test::random_floats;

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// sizes right-aligned into 4 dims, leading dims 1.
std::vector<int64_t> pad4(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(4 - sizes.size(), 1);
  s.insert(s.end(), sizes.begin(), sizes.end());
  return s;
}

// Element (b, h, r, c) of a row-major tensor of 4-d sizes `s`, where a dim of
// size 1 is repeated (broadcast).
int64_t at4(const std::vector<int64_t>& s, int64_t b, int64_t h, int64_t r, int64_t c) {
  const int64_t idx[] = {b, h, r, c};
  int64_t off = 0;
  for (int d = 0; d < 4; ++d) off = off * s[d] + (s[d] == 1 ? 0 : idx[d]);
  return off;
}

// Each element within tol * (max |ref| + |ref[i]|) (tests/cpp/compare.h).
void expect_close(const std::vector<float>& got, const std::vector<double>& ref, double tol = 1e-5) {
  EXPECT_TRUE(test::all_close(got, ref, tol));
}

enum class Mask { None, Float, Bool };

struct Case {
  std::vector<int64_t> q, k, v;  // query [.., L, E], key [.., S, E], value [.., S, Ev]
  Mask mask = Mask::None;
  std::vector<int64_t> mask_sizes;
  bool causal = false;
  double scale = -1;  // < 0: None
  bool gqa = false;
  std::vector<int64_t> out;  // expected out sizes
};

// torch's definition, in double: scores = scale * q k^T + mask (bool: false
// -> -inf; causal: key j > query i -> -inf), softmax over keys, times v. A
// query head h reads key/value head h when they have as many heads, head 0
// when they have one, else h / (Hq / Hkv) (grouped-query attention).
std::vector<double> ref_sdpa(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, const std::vector<float>& fmask,
                             const std::vector<uint8_t>& bmask) {
  const std::vector<int64_t> qs = pad4(c.q), ks = pad4(c.k), vs = pad4(c.v), os = pad4(c.out);
  const std::vector<int64_t> ms = c.mask == Mask::None ? std::vector<int64_t>{} : pad4(c.mask_sizes);
  const int64_t B = os[0], H = os[1], L = os[2], Ev = os[3], S = ks[2], E = qs[3];
  const double scale = c.scale >= 0 ? c.scale : 1.0 / std::sqrt(double(E));
  const double inf = std::numeric_limits<double>::infinity();
  auto kv_head = [&](int64_t heads, int64_t h) {
    return heads == H ? h : heads == 1 ? 0 : h / (H / heads);
  };
  std::vector<double> out(static_cast<size_t>(B * H * L * Ev), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = kv_head(ks[1], h), hv = kv_head(vs[1], h);
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(static_cast<size_t>(S));
        double mx = -inf;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) {
            dot += double(q[at4(qs, b, h, i, e)]) * k[at4(ks, b, hk, j, e)];
          }
          s[j] = dot * scale;
          if (c.mask == Mask::Float) s[j] += fmask[at4(ms, b, h, i, j)];
          if (c.mask == Mask::Bool && !bmask[at4(ms, b, h, i, j)]) s[j] = -inf;
          if (c.causal && j > i) s[j] = -inf;
          mx = std::max(mx, s[j]);
        }
        if (mx == -inf) continue;  // every key masked: zeros
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += std::exp(s[j] - mx);
        for (int64_t j = 0; j < S; ++j) {
          const double p = std::exp(s[j] - mx) / sum;
          for (int64_t e = 0; e < Ev; ++e) {
            out[((b * H + h) * L + i) * Ev + e] += p * v[at4(vs, b, hv, j, e)];
          }
        }
      }
    }
  }
  return out;
}

// Runs the case with random inputs (bool masks about 1 in 4 false, and row 1
// of the mask all false when `mask_row_off`) and compares with ref_sdpa.
void check_case(const Case& c, unsigned seed, bool mask_row_off = false) {
  KernelHarness h;
  std::vector<float> q = random_floats(numel(c.q), seed), k = random_floats(numel(c.k), seed + 1),
                     v = random_floats(numel(c.v), seed + 2);
  std::vector<float> fmask;
  std::vector<uint8_t> bmask;
  EValue* mask = h.none();
  if (c.mask == Mask::Float) {
    fmask = random_floats(numel(c.mask_sizes), seed + 3, -2.f, 2.f);
    mask = h.tensor<float>(c.mask_sizes, fmask);
  } else if (c.mask == Mask::Bool) {
    std::vector<float> r = random_floats(numel(c.mask_sizes), seed + 3, 0.f, 1.f);
    for (float x : r) bmask.push_back(x > 0.25f);
    if (mask_row_off) {
      const int64_t S = c.mask_sizes.back();
      for (int64_t j = 0; j < S; ++j) bmask[S + j] = 0;  // second row of the first [L, S] plane
    }
    mask = h.bool_tensor(c.mask_sizes, bmask);
  }
  EValue* out = h.empty<float>(c.out);
  ASSERT_EQ(h.call(kOp, {h.tensor<float>(c.q, q), h.tensor<float>(c.k, k), h.tensor<float>(c.v, v),
                         mask, h.d(0.0), h.b(c.causal), c.scale >= 0 ? h.d(c.scale) : h.none(),
                         h.b(c.gqa), out}),
            Error::Ok);
  expect_close(h.values<float>(out), ref_sdpa(c, q, k, v, fmask, bmask));
}

// L, S, E, Ev below, at and above 16, odd ones among them.
TEST(OpScaledDotProductAttention, MatchesReferenceBelowAtAndAboveSixteen) {
  const int64_t sizes[][4] = {{1, 1, 1, 1}, {5, 7, 3, 9}, {16, 16, 16, 16}, {17, 15, 33, 5}, {3, 40, 8, 17}};
  unsigned seed = 1;
  for (const auto& s : sizes) {
    SCOPED_TRACE(::testing::Message() << "L " << s[0] << " S " << s[1] << " E " << s[2] << " Ev " << s[3]);
    Case c;
    c.q = {2, 3, s[0], s[2]}, c.k = {2, 3, s[1], s[2]}, c.v = {2, 3, s[1], s[3]};
    c.out = {2, 3, s[0], s[3]};
    check_case(c, seed += 10);
  }
}

TEST(OpScaledDotProductAttention, RankThreeAndTwo) {
  Case c;
  c.q = {4, 5, 8}, c.k = {4, 7, 8}, c.v = {4, 7, 3}, c.out = {4, 5, 3};
  check_case(c, 100);
  c.q = {5, 8}, c.k = {7, 8}, c.v = {7, 3}, c.out = {5, 3};
  check_case(c, 110);
}

// Key and value with batch or heads 1 are repeated; mixed ranks broadcast
// like torch's matmul (query [4, 3, 8] with key [4, 4, 6, 8] is a sample of
// torch's own OpInfo).
TEST(OpScaledDotProductAttention, BroadcastsBatchAndHeadsOfSizeOne) {
  Case c;
  c.q = {2, 3, 5, 8}, c.k = {1, 3, 7, 8}, c.v = {2, 1, 7, 6}, c.out = {2, 3, 5, 6};
  check_case(c, 200);
  c.q = {4, 3, 8}, c.k = {4, 4, 6, 8}, c.v = {4, 4, 6, 8}, c.out = {4, 4, 3, 8};
  check_case(c, 210);
}

TEST(OpScaledDotProductAttention, FloatMaskBroadcastOverHeadsAndBatch) {
  Case c;
  c.q = {2, 3, 5, 8}, c.k = {2, 3, 7, 8}, c.v = {2, 3, 7, 4}, c.out = {2, 3, 5, 4};
  c.mask = Mask::Float;
  unsigned seed = 300;
  const std::vector<int64_t> masks[] = {{2, 1, 5, 7}, {5, 7}, {1, 3, 1, 7}, {2, 3, 5, 7}, {3, 5, 1}};
  for (const std::vector<int64_t>& m : masks) {
    SCOPED_TRACE(::testing::Message() << "mask dims " << m.size() << " first " << m[0]);
    c.mask_sizes = m;
    check_case(c, seed += 10);
  }
}

TEST(OpScaledDotProductAttention, BoolMaskDropsKeysAndAFullyMaskedRowIsZero) {
  Case c;
  c.q = {2, 3, 5, 8}, c.k = {2, 3, 17, 8}, c.v = {2, 3, 17, 4}, c.out = {2, 3, 5, 4};
  c.mask = Mask::Bool;
  c.mask_sizes = {5, 17};
  check_case(c, 400);
  check_case(c, 410, /*mask_row_off=*/true);
  c.mask_sizes = {2, 1, 5, 1};  // one flag per query row, repeated over the keys
  check_case(c, 420);

  // Row 1 of every head: all keys masked -> exactly zero (torch eager).
  KernelHarness h;
  std::vector<uint8_t> m(5 * 17, 1);
  for (int j = 0; j < 17; ++j) m[17 + j] = 0;
  EValue* out = h.empty<float>({2, 3, 5, 4});
  ASSERT_EQ(h.call(kOp, {h.tensor<float>({2, 3, 5, 8}, random_floats(240, 1)),
                         h.tensor<float>({2, 3, 17, 8}, random_floats(816, 2)),
                         h.tensor<float>({2, 3, 17, 4}, random_floats(408, 3)), h.bool_tensor({5, 17}, m),
                         h.d(0.0), h.b(false), h.none(), h.b(false), out}),
            Error::Ok);
  std::vector<float> y = h.values<float>(out);
  for (int p = 0; p < 6; ++p) {
    for (int e = 0; e < 4; ++e) EXPECT_EQ(y[(p * 5 + 1) * 4 + e], 0.f) << "plane " << p;
    EXPECT_NE(y[(p * 5 + 0) * 4], 0.f);
  }
}

// A float mask of -inf over a whole row gives zeros too, like the bool one.
TEST(OpScaledDotProductAttention, FloatMaskOfMinusInfinityRowIsZero) {
  KernelHarness h;
  std::vector<float> m(3 * 4, 0.f);
  for (int j = 0; j < 4; ++j) m[4 * 2 + j] = -std::numeric_limits<float>::infinity();
  EValue* out = h.empty<float>({1, 3, 2});
  ASSERT_EQ(h.call(kOp, {h.tensor<float>({1, 3, 2}, random_floats(6, 4)),
                         h.tensor<float>({1, 4, 2}, random_floats(8, 5)),
                         h.tensor<float>({1, 4, 2}, random_floats(8, 6)), h.tensor<float>({3, 4}, m),
                         h.d(0.0), h.b(false), h.none(), h.b(false), out}),
            Error::Ok);
  EXPECT_EQ(h.values<float>(out)[4], 0.f);
  EXPECT_EQ(h.values<float>(out)[5], 0.f);
}

// Query i sees keys 0..i: fewer, as many and more queries than keys.
TEST(OpScaledDotProductAttention, CausalIsTopLeftAligned) {
  for (int64_t L : {3, 9, 20}) {
    SCOPED_TRACE(::testing::Message() << "L " << L);
    Case c;
    c.q = {2, 2, L, 16}, c.k = {2, 2, 9, 16}, c.v = {2, 2, 9, 5}, c.out = {2, 2, L, 5};
    c.causal = true;
    check_case(c, 500 + unsigned(L));
  }
}

TEST(OpScaledDotProductAttention, GroupedQueryAttention) {
  Case c;
  c.q = {2, 6, 5, 8}, c.k = {2, 2, 7, 8}, c.v = {2, 2, 7, 3}, c.out = {2, 6, 5, 3};
  c.gqa = true;
  check_case(c, 600);
  c.k = {2, 3, 7, 8}, c.v = {2, 3, 7, 3};
  c.causal = true;
  check_case(c, 610);
  c.causal = false;
  c.mask = Mask::Bool, c.mask_sizes = {2, 1, 5, 7};
  check_case(c, 620, /*mask_row_off=*/true);
}

TEST(OpScaledDotProductAttention, GivenScale) {
  Case c;
  c.q = {1, 2, 4, 8}, c.k = {1, 2, 6, 8}, c.v = {1, 2, 6, 8}, c.out = {1, 2, 4, 8};
  for (double scale : {0.0, 0.3, 2.5}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    c.scale = scale;
    check_case(c, 700);
  }
}

// No keys: zeros, as torch eager gives.
TEST(OpScaledDotProductAttention, NoKeysGiveZeros) {
  KernelHarness h;
  EValue* out = h.empty<float>({1, 2, 3, 4});
  ASSERT_EQ(h.call(kOp, {h.tensor<float>({1, 2, 3, 4}, random_floats(24, 7)), h.empty<float>({1, 2, 0, 4}),
                         h.empty<float>({1, 2, 0, 4}), h.none(), h.d(0.0), h.b(false), h.none(),
                         h.b(false), out}),
            Error::Ok);
  for (float y : h.values<float>(out)) EXPECT_EQ(y, 0.f);
}

// Enough rows and work that 2 and 3 threads split them (the harness checks
// the bits equal the 1-thread run's), with a mask and causal rows.
TEST(OpScaledDotProductAttention, SplitsOverThreadsWithTheSameBits) {
  Case c;
  c.q = {2, 4, 33, 32}, c.k = {2, 4, 64, 32}, c.v = {2, 4, 64, 32}, c.out = {2, 4, 33, 32};
  c.mask = Mask::Float, c.mask_sizes = {2, 1, 33, 64};
  check_case(c, 800);
  c.mask = Mask::None, c.causal = true;
  check_case(c, 810);
}

// prepare's reason for refusing `args` ("" if it accepts them).
std::string refusal(std::vector<EValue*> args, Error* e) {
  HeapAllocator allocator;
  PrepareContext ctx(kOp, 0, &allocator);
  *e = KernelHarness::kernel(kOp)->prepare(ctx, Span<EValue* const>(args.data(), args.size()));
  return ctx.message();
}

TEST(OpScaledDotProductAttention, RejectsDropoutAndMaskWithCausal) {
  KernelHarness h;
  auto args = [&](EValue* mask, double dropout, bool causal) {
    return std::vector<EValue*>{h.empty<float>({1, 2, 3, 4}), h.empty<float>({1, 2, 5, 4}),
                                h.empty<float>({1, 2, 5, 4}), mask, h.d(dropout), h.b(causal),
                                h.none(), h.b(false), h.empty<float>({1, 2, 3, 4})};
  };
  Error e;
  EXPECT_EQ(refusal(args(h.none(), 0.0, true), &e), "");
  EXPECT_EQ(e, Error::Ok);
  std::string why = refusal(args(h.none(), 0.1, false), &e);
  EXPECT_EQ(e, Error::OperatorMissing);
  EXPECT_NE(why.find("dropout_p=0.1"), std::string::npos) << why;
  EXPECT_NE(why.find("expected 0"), std::string::npos) << why;
  why = refusal(args(h.empty<float>({3, 5}), 0.0, true), &e);
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_NE(why.find("is_causal"), std::string::npos) << why;
}

TEST(OpScaledDotProductAttention, RejectsMismatchedShapesDtypesAndOut) {
  KernelHarness h;
  auto call = [&](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v,
                  EValue* mask, bool gqa, std::vector<int64_t> out) {
    return h.prepare_only(kOp, {h.empty<float>(q), h.empty<float>(k), h.empty<float>(v), mask, h.d(0.0),
                                h.b(false), h.none(), h.b(gqa), h.empty<float>(out)});
  };
  const std::vector<int64_t> q = {2, 4, 3, 8}, kv = {2, 4, 5, 8}, out = {2, 4, 3, 8};
  EXPECT_EQ(call(q, kv, kv, h.none(), false, out), Error::Ok);
  EXPECT_EQ(call(q, {2, 4, 5, 7}, kv, h.none(), false, out), Error::InvalidProgram);  // E differs
  EXPECT_EQ(call(q, kv, {2, 4, 6, 8}, h.none(), false, out), Error::InvalidProgram);  // S differs
  EXPECT_EQ(call(q, {3, 4, 5, 8}, {3, 4, 5, 8}, h.none(), false, out), Error::InvalidProgram);  // batch
  // fewer key/value heads: only with enable_gqa, and only a divisor of query's
  EXPECT_EQ(call(q, {2, 2, 5, 8}, {2, 2, 5, 8}, h.none(), false, out), Error::InvalidProgram);
  EXPECT_EQ(call(q, {2, 2, 5, 8}, {2, 2, 5, 8}, h.none(), true, out), Error::Ok);
  EXPECT_EQ(call(q, {2, 3, 5, 8}, {2, 3, 5, 8}, h.none(), true, out), Error::InvalidProgram);
  EXPECT_EQ(call(q, kv, kv, h.none(), false, {2, 4, 3, 7}), Error::InvalidProgram);  // out
  EXPECT_EQ(call(q, kv, kv, h.none(), false, {8, 3, 8}), Error::InvalidProgram);  // out rank
  EXPECT_EQ(call(q, kv, kv, h.empty<float>({2, 4, 3, 4}), false, out), Error::InvalidProgram);  // mask S
  EXPECT_EQ(call(q, kv, kv, h.empty<float>({4, 3, 5}), false, out), Error::Ok);
  EXPECT_EQ(call(q, kv, kv, h.empty<float>({1, 1, 4, 3, 5}), false, out), Error::InvalidProgram);
  EXPECT_EQ(call(q, kv, kv, h.empty<int64_t>({3, 5}), false, out), Error::OperatorMissing);  // mask dtype
  EXPECT_EQ(call({8}, {5, 8}, {5, 8}, h.none(), false, {8}), Error::OperatorMissing);  // 1-d query
  EXPECT_EQ(h.prepare_only(kOp, {h.empty<double>(q), h.empty<double>(kv), h.empty<double>(kv), h.none(),
                                 h.d(0.0), h.b(false), h.none(), h.b(false), h.empty<double>(out)}),
            Error::OperatorMissing);
  EXPECT_EQ(h.prepare_only(kOp, {h.empty<float>(q), h.empty<float>(kv), h.empty<float>(kv), h.none(),
                                 h.d(0.0), h.b(false), h.i(2), h.b(false), h.empty<float>(out)}),
            Error::InvalidProgram);  // scale must be a float or None
}

}  // namespace
}  // namespace tern
