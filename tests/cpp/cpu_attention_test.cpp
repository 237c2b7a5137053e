// The cpu backend's attention op (backends/cpu/ops/attention.cpp) on every ISA
// this build and CPU have, against softmax(q k^T * scale + mask) v computed
// in double precision: tile edges in queries and keys, grouped heads,
// broadcast masks, causal cuts, rows that see no key (zeros); and the same
// bits for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tests/cpp/random_util.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/program.h"
#include "runtime/core/thread_pool.h"

namespace tern {
namespace cpu {
namespace {

using test::random_floats;

struct Case {
  int64_t batch, heads, kv_heads, l, s, e, ev;
  int64_t mask_sizes[4];  // 0: no mask; else broadcast to [batch, heads, l, s]
  bool causal;
  bool blank_row;  // mask row 1 all -inf
};

int64_t at4(const int64_t* sizes, int64_t b, int64_t h, int64_t i, int64_t j) {
  const int64_t idx[4] = {b, h, i, j};
  int64_t off = 0;
  for (int d = 0; d < 4; ++d) off = off * sizes[d] + (sizes[d] == 1 ? 0 : idx[d]);
  return off;
}

std::vector<double> reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, const std::vector<float>& mask, double scale) {
  std::vector<double> y(size_t(c.batch * c.heads * c.l * c.ev), 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t hk = h / (c.heads / c.kv_heads);
      for (int64_t i = 0; i < c.l; ++i) {
        std::vector<double> p(size_t(c.s), -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.s; ++j) {
          if (c.causal && j > i) continue;
          double d = 0;
          for (int64_t t = 0; t < c.e; ++t) d += double(q[((b * c.heads + h) * c.l + i) * c.e + t]) * k[((b * c.kv_heads + hk) * c.s + j) * c.e + t];
          d *= scale;
          if (!mask.empty()) d += mask[size_t(at4(c.mask_sizes, b, h, i, j))];
          p[size_t(j)] = d;
          mx = std::max(mx, d);
        }
        if (mx == -INFINITY) continue;  // zeros
        double sum = 0;
        for (double& x : p) sum += x = std::exp(x - mx);
        for (int64_t t = 0; t < c.ev; ++t) {
          double acc = 0;
          for (int64_t j = 0; j < c.s; ++j) acc += p[size_t(j)] / sum * v[((b * c.kv_heads + hk) * c.s + j) * c.ev + t];
          y[size_t(((b * c.heads + h) * c.l + i) * c.ev + t)] = acc;
        }
      }
    }
  return y;
}

// k and v [batch * kv_heads, s, width] laid in `rows` >= s rows each (the
// rows past s NaN: a KV cache read to its first s positions, kv_rows).
std::vector<float> with_rows(const std::vector<float>& t, int64_t s, int64_t width, int64_t rows) {
  const size_t heads = t.size() / size_t(s * width);
  std::vector<float> out(heads * size_t(rows * width), NAN);
  for (size_t h = 0; h < heads; ++h)
    std::copy_n(t.begin() + long(h * size_t(s * width)), s * width, out.begin() + long(h * size_t(rows * width)));
  return out;
}

std::vector<float> run(const Case& c, const Isa& isa, const std::vector<float>& q, const std::vector<float>& k0,
                       const std::vector<float>& v0, const std::vector<float>& mask, float scale, int threads,
                       int64_t rows) {
  static ThreadPool pool;
  EXPECT_EQ(pool.reserve(3), Error::Ok);
  const std::vector<float> k = with_rows(k0, c.s, c.e, rows), v = with_rows(v0, c.s, c.ev, rows);
  AttentionOp op{};
  AttentionGeometry& a = op.attention;
  a.batch = c.batch, a.heads = c.heads, a.kv_heads = c.kv_heads, a.l = c.l, a.s = c.s, a.e = c.e, a.ev = c.ev;
  a.kv_rows = rows;
  a.k = k.data(), a.v = v.data(), a.mask = mask.empty() ? nullptr : mask.data();
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    a.mask_strides[d] = c.mask_sizes[d] == 1 ? 0 : stride;
    stride *= c.mask_sizes[d] ? c.mask_sizes[d] : 1;
  }
  std::vector<float> packed(size_t(attention_packed_floats(a)), NAN);
  a.packed = packed.data(), a.scale = scale, a.causal = c.causal;
  std::vector<float> y(size_t(c.batch * c.heads * c.l * c.ev), NAN);
  op.x = q.data(), op.y = y.data(), op.numel = int64_t(y.size());
  const size_t per = (attention_scratch_bytes(a, isa) + 63) & ~size_t(63);
  std::vector<uint8_t> scratch(per * threads + 64);
  void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  RunContext ctx(nullptr, base, per, threads, per, threads > 1 ? &pool : nullptr);
  run_attention(op, isa, ctx);
  return y;
}

TEST(CpuAttention, test_every_isa_matches_reference_and_threads_and_cache_rows_give_the_same_bits) {
  const Case cases[] = {
      // b  h  hk  l   s   e   ev   mask sizes       causal blank
      {1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, false, false},
      {2, 3, 3, 33, 47, 16, 24, {0, 0, 0, 0}, false, false},
      {1, 2, 2, 8, 16, 64, 64, {0, 0, 0, 0}, false, false},
      {1, 4, 4, 40, 40, 20, 7, {0, 0, 0, 0}, true, false},
      {1, 2, 2, 9, 30, 16, 16, {0, 0, 0, 0}, true, false},   // more keys than queries
      {1, 2, 2, 30, 9, 16, 16, {0, 0, 0, 0}, true, false},   // more queries than keys
      {1, 8, 2, 20, 21, 16, 17, {0, 0, 0, 0}, false, false}, // grouped query
      {2, 4, 4, 17, 19, 8, 8, {1, 1, 17, 19}, false, false}, // mask over queries and keys
      {2, 4, 4, 5, 19, 8, 8, {2, 1, 1, 19}, false, true},    // per batch and key; a blank row
      {2, 3, 3, 6, 33, 12, 5, {2, 3, 6, 33}, false, true},   // full mask
  };
  for (const Case& c : cases) {
    auto q = random_floats(size_t(c.batch * c.heads * c.l * c.e), 1);
    auto k = random_floats(size_t(c.batch * c.kv_heads * c.s * c.e), 2);
    auto v = random_floats(size_t(c.batch * c.kv_heads * c.s * c.ev), 3);
    std::vector<float> mask;
    Case cs = c;
    if (c.mask_sizes[0]) {
      mask = random_floats(size_t(c.mask_sizes[0] * c.mask_sizes[1] * c.mask_sizes[2] * c.mask_sizes[3]), 4);
      if (c.blank_row) {  // query row 1 (through the mask's own row 1, or every row when it broadcasts) sees nothing
        const int64_t rows = c.mask_sizes[2], s = c.mask_sizes[3];
        for (size_t r = 0; r < mask.size() / size_t(s); ++r)
          if (rows == 1 || int64_t(r) % rows == 1)
            for (int64_t j = 0; j < s; ++j) mask[r * size_t(s) + size_t(j)] = -INFINITY;
      }
    } else {
      for (int64_t& d : cs.mask_sizes) d = 1;
    }
    const float scale = 1.f / std::sqrt(float(c.e));
    const std::vector<double> want = reference(cs, q, k, v, mask, scale);
    const Isa* isas[kMaxKernelSets];
    const int n = supported_isas(isas, kMaxKernelSets);
    for (int ii = 0; ii < n; ++ii) {
      const Isa& isa = *isas[ii];
      const std::vector<float> one = run(cs, isa, q, k, v, mask, scale, 1, c.s);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(one[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
            << isa.name << " l=" << c.l << " s=" << c.s << " e=" << c.e << " at " << i;
      }
      for (int threads : {2, 3}) {
        const std::vector<float> many = run(cs, isa, q, k, v, mask, scale, threads, c.s);
        ASSERT_EQ(0, memcmp(one.data(), many.data(), one.size() * sizeof(float)))
            << isa.name << ": " << threads << " threads differ from 1, l=" << c.l << " s=" << c.s;
      }
      // k and v the first s of more rows (kv_rows; NaN past s): the same bits
      const std::vector<float> cache = run(cs, isa, q, k, v, mask, scale, 2, c.s + 3);
      ASSERT_EQ(0, memcmp(one.data(), cache.data(), one.size() * sizeof(float)))
          << isa.name << ": k and v read from rows of " << c.s + 3 << " differ, l=" << c.l << " s=" << c.s;
    }
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tern
