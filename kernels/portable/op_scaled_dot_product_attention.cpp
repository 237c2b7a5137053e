// aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value,
//     Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *,
//     float? scale=None, bool enable_gqa=False) -> Tensor
// args: [query, key, value, attn_mask, dropout_p, is_causal, scale,
//        enable_gqa, out]
//
// float32. Each of query [.., L, E], key [.., S, E], value [.., S, Ev] has 2
// to 4 dims, read as [batch, heads, rows, cols] with missing leading dims 1;
// their batch and head dims broadcast as in torch's matmul (a dim of 1 is
// repeated). out [.., L, Ev], the broadcast batch and heads:
//
//   out[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, h', j] + mask[b, h, i, j]) v[b, h', j]
//
// h' = h / (Hq / Hkv) when enable_gqa and key/value have fewer heads Hkv that
// divide query's Hq (grouped-query attention), else h. scale defaults to
// 1 / sqrt(E). attn_mask is None, float32 (added to the scores) or bool
// (false drops the key), broadcastable to [batch, heads, L, S]; is_causal
// drops keys j > i (query i sees keys 0..i, top-left aligned as in torch).
// dropout_p must be 0 (dropout is random; an inference runtime has no use
// for it).
//
// A row whose every key is dropped (all -inf scores, or S = 0) comes out as
// zeros: what F.scaled_dot_product_attention gives in torch eager (2.14, on
// each of its CPU paths), not the NaN of a plain softmax over -inf.
//
// Each output row is computed by one thread from one row of scores in its
// scratch, in a fixed order: the same bits for any thread count. Scores and
// the weighted sum of values accumulate in float (as torch's CPU kernel
// does), the softmax's sum in double, after the row max is subtracted.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half_stage.h"

namespace tern {
namespace portable {
namespace {

enum class MaskKind : int32_t { None, Float, Bool };

// What run needs, computed by prepare into persistent memory (too big for
// the inline state). Strides are in elements; a broadcast dim has stride 0.
struct SdpaParams {
  int64_t batch, heads, L, S, E, Ev;  // out [batch, heads, L, Ev]
  int64_t q_bs, q_hs;                 // query [.., L, E]
  int64_t k_bs, k_hs, k_group;        // key head of out head h: h / k_group
  int64_t v_bs, v_hs, v_group;
  int64_t m_bs, m_hs, m_ls, m_ss;     // mask element (b, h, i, j)
  float scale;
  MaskKind mask;
  bool causal;
};

const SdpaParams& load_params(const RunContext& ctx) {
  const SdpaParams* p;
  memcpy(&p, ctx.state(), sizeof(p));
  return *p;
}

// Multiply-adds a thread should get at least (smaller work stays on one).
constexpr int64_t kMinFlopsPerThread = 1 << 16;

// a[0..n) . b[0..n) over eight running sums: they vectorize, and they spare
// the row loop one long chain of dependent adds. A fixed order: the same
// bits on every thread.
float dot(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    for (int u = 0; u < 8; ++u) s[u] += a[e + u] * b[e + u];
  }
  for (; e < n; ++e) s[e % 8] += a[e] * b[e];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

// One output row: out[b, h, i, :], with `scores` (S floats) for the row's
// scores and then its softmax weights.
void attention_row(const SdpaParams& p, EValue* const* args, int64_t b, int64_t h, int64_t i,
                   float* scores) {
  const float* q = args[0]->tensor.data_as<const float>() + b * p.q_bs + h * p.q_hs + i * p.E;
  const float* k = args[1]->tensor.data_as<const float>() + b * p.k_bs + (h / p.k_group) * p.k_hs;
  const float* v = args[2]->tensor.data_as<const float>() + b * p.v_bs + (h / p.v_group) * p.v_hs;
  float* out = args[8]->tensor.data_as<float>() + ((b * p.heads + h) * p.L + i) * p.Ev;
  const int64_t m0 = b * p.m_bs + h * p.m_hs + i * p.m_ls;
  const float* fmask = p.mask == MaskKind::Float ? args[3]->tensor.data_as<const float>() + m0 : nullptr;
  const uint8_t* bmask = p.mask == MaskKind::Bool ? args[3]->tensor.data_as<const uint8_t>() + m0 : nullptr;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  // Keys past n are masked by is_causal; their weights would be 0.
  const int64_t n = p.causal && i + 1 < p.S ? i + 1 : p.S;
  float mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) {
    float s = dot(q, k + j * p.E, p.E) * p.scale;
    if (fmask) s += fmask[j * p.m_ss];
    if (bmask && bmask[j * p.m_ss] == 0) s = kNegInf;
    scores[j] = s;
    mx = s > mx || s != s ? s : mx;  // a NaN score stays the max: the row comes out NaN
  }
  for (int64_t e = 0; e < p.Ev; ++e) out[e] = 0.f;
  if (mx == kNegInf) return;  // every key dropped (or none): zeros, as torch eager
  double sum = 0;  // weights are in (0, 1]: double keeps long rows exact enough
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);  // 0 for a dropped key
    sum += scores[j];
  }
  for (int64_t j = 0; j < n; ++j) {
    const float w = scores[j];
    const float* vj = v + j * p.Ev;
    for (int64_t e = 0; e < p.Ev; ++e) out[e] += w * vj[e];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t e = 0; e < p.Ev; ++e) out[e] *= inv;
}

Error sdpa_run(RunContext& ctx, EValue* const* args) {
  const SdpaParams& p = load_params(ctx);
  const int64_t rows = p.batch * p.heads * p.L;
  ctx.parallel_for(rows, grain_for(kMinFlopsPerThread, {p.S, p.E + p.Ev}), [&](RunContext& t, int64_t r0, int64_t r1) {
    float* scores = static_cast<float*>(t.scratch());
    for (int64_t r = r0; r < r1; ++r) {  // row r: (b, h, i) of out
      const int64_t bh = r / p.L;
      attention_row(p, args, bh / p.heads, bh % p.heads, r % p.L, scores);
    }
  });
  return Error::Ok;
}

// A tensor's sizes right-aligned into [batch, heads, rows, cols] (missing
// leading dims 1).
void sizes4(const Tensor& t, int64_t* s) {
  for (int d = 0; d < 4; ++d) s[d] = d < 4 - t.dim ? 1 : t.sizes[d - (4 - t.dim)];
}

// Strides of the batch and head dims of a contiguous [batch, heads, rows,
// cols] (0 where the size is 1: broadcast).
void batch_strides(const int64_t* s, int64_t* batch, int64_t* head) {
  *head = s[1] == 1 ? 0 : s[2] * s[3];
  *batch = s[0] == 1 ? 0 : s[1] * s[2] * s[3];
}

// Merges `size` of input `name` into the broadcast dim `*out`; fails unless
// they are equal or one is 1.
Error broadcast_dim(PrepareContext& ctx, int64_t size, const char* name, const char* dim,
                    int64_t* out) {
  if (size == *out || size == 1) return Error::Ok;
  if (*out == 1) {
    *out = size;
    return Error::Ok;
  }
  return ctx.fail(Error::InvalidProgram, "%s %s size %lld does not broadcast with %lld", name, dim,
                  (long long)size, (long long)*out);
}

Error check_args(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 9));
  const char* names[] = {"query", "key", "value"};
  for (int i = 0; i < 3; ++i) {
    TERN_CHECK_OK(ctx.expect_tensor(args, i));
    const Tensor& t = args[i]->tensor;
    if (t.dtype != ScalarType::Float32) return fail_dtype(ctx, names[i], t.dtype);
    if (t.dim < 2 || t.dim > 4) {
      return ctx.fail(Error::OperatorMissing, "%s must have 2 to 4 dims ([batch, heads, rows, "
                      "cols]), got %d-d", names[i], t.dim);
    }
  }
  if (!args[3]->is_none() && !args[3]->is_tensor()) {
    return ctx.fail(Error::InvalidProgram, "attn_mask must be a tensor or None, got %s",
                    tag_name(args[3]->tag));
  }
  TERN_CHECK_OK(ctx.expect_tag(args, 4, Tag::Double));
  TERN_CHECK_OK(ctx.expect_tag(args, 5, Tag::Bool));
  if (!args[6]->is_none() && !args[6]->is_double()) {
    return ctx.fail(Error::InvalidProgram, "scale must be a float or None, got %s",
                    tag_name(args[6]->tag));
  }
  TERN_CHECK_OK(ctx.expect_tag(args, 7, Tag::Bool));
  TERN_CHECK_OK(ctx.expect_tensor(args, 8));
  TERN_CHECK_OK(expect_dtype(ctx, args[8]->tensor, "out", ScalarType::Float32));
  if (args[4]->d != 0.0) {
    return ctx.fail(Error::OperatorMissing, "dropout_p=%g is not supported: expected 0 (dropout "
                    "is random and for training only)", args[4]->d);
  }
  if (args[3]->is_tensor() && args[5]->b) {
    return ctx.fail(Error::InvalidProgram, "attn_mask must be None when is_causal=True (as in "
                    "torch)");
  }
  return Error::Ok;
}

// Batch and head sizes and strides of query, key and value; *p gets the
// broadcast sizes and the strides.
Error plan_inputs(PrepareContext& ctx, Span<EValue* const> args, SdpaParams* p) {
  int64_t q[4], k[4], v[4];
  sizes4(args[0]->tensor, q), sizes4(args[1]->tensor, k), sizes4(args[2]->tensor, v);
  if (k[3] != q[3] || v[2] != k[2]) {
    return ctx.fail(Error::InvalidProgram, "key [.., %lld, %lld] and value [.., %lld, %lld] "
                    "must be [.., S, E] and [.., S, Ev] with E = %lld (query's last dim)",
                    (long long)k[2], (long long)k[3], (long long)v[2], (long long)v[3],
                    (long long)q[3]);
  }
  // Grouped-query attention: key/value heads repeated Hq / Hkv times.
  const bool gqa = args[7]->b;
  const int64_t k_group = gqa && k[1] > 0 && k[1] < q[1] && q[1] % k[1] == 0 ? q[1] / k[1] : 1;
  const int64_t v_group = gqa && v[1] > 0 && v[1] < q[1] && q[1] % v[1] == 0 ? q[1] / v[1] : 1;
  int64_t batch = q[0], heads = q[1];
  TERN_CHECK_OK(broadcast_dim(ctx, k[0], "key", "batch", &batch));
  TERN_CHECK_OK(broadcast_dim(ctx, v[0], "value", "batch", &batch));
  TERN_CHECK_OK(broadcast_dim(ctx, k[1] * k_group, "key", "heads", &heads));
  TERN_CHECK_OK(broadcast_dim(ctx, v[1] * v_group, "value", "heads", &heads));
  p->batch = batch, p->heads = heads, p->L = q[2], p->S = k[2], p->E = q[3], p->Ev = v[3];
  batch_strides(q, &p->q_bs, &p->q_hs);
  batch_strides(k, &p->k_bs, &p->k_hs);
  batch_strides(v, &p->v_bs, &p->v_hs);
  p->k_group = k[1] == 1 ? 1 : k_group;
  p->v_group = v[1] == 1 ? 1 : v_group;
  return Error::Ok;
}

// attn_mask: None, float32 or bool, broadcastable to [batch, heads, L, S].
Error plan_mask(PrepareContext& ctx, const EValue& mask, SdpaParams* p) {
  p->mask = MaskKind::None;
  p->m_bs = p->m_hs = p->m_ls = p->m_ss = 0;
  if (mask.is_none()) return Error::Ok;
  const Tensor& m = mask.tensor;
  if (m.dtype != ScalarType::Float32 && m.dtype != ScalarType::Bool) {
    return fail_dtype(ctx, "attn_mask (expected float32 or bool)", m.dtype);
  }
  if (m.dim > 4) return ctx.fail(Error::InvalidProgram, "attn_mask must have at most 4 dims, got %d", m.dim);
  const int64_t target[] = {p->batch, p->heads, p->L, p->S};
  int64_t s[4];
  sizes4(m, s);
  for (int d = 0; d < 4; ++d) {
    if (s[d] != target[d] && s[d] != 1) {
      return ctx.fail(Error::InvalidProgram, "attn_mask [%lld, %lld, %lld, %lld] (padded to 4 dims) "
                      "does not broadcast to [batch, heads, L, S] = [%lld, %lld, %lld, %lld]",
                      (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3],
                      (long long)target[0], (long long)target[1], (long long)target[2],
                      (long long)target[3]);
    }
  }
  int64_t* strides[] = {&p->m_bs, &p->m_hs, &p->m_ls, &p->m_ss};
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    *strides[d] = s[d] == 1 ? 0 : stride;
    stride *= s[d];
  }
  p->mask = m.dtype == ScalarType::Bool ? MaskKind::Bool : MaskKind::Float;
  return Error::Ok;
}

}  // namespace

static Error scaled_dot_product_attention_prepare_f32(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(check_args(ctx, args));
  SdpaParams p;
  TERN_CHECK_OK(plan_inputs(ctx, args, &p));
  TERN_CHECK_OK(plan_mask(ctx, *args[3], &p));
  const int out_dim = std::max({args[0]->tensor.dim, args[1]->tensor.dim, args[2]->tensor.dim});
  const int64_t out4[] = {p.batch, p.heads, p.L, p.Ev};
  TERN_CHECK_OK(expect_sizes(ctx, args[8]->tensor, "out", out4 + (4 - out_dim), out_dim));
  // torch's default 1 / sqrt(E); with E = 0 every score is 0 whatever the
  // scale (torch gives the mean of value rows there, and so does this).
  p.scale = static_cast<float>(args[6]->is_double() ? args[6]->d
                                : p.E > 0 ? 1.0 / std::sqrt(double(p.E)) : 1.0);
  p.causal = args[5]->b;
  SdpaParams* kept = static_cast<SdpaParams*>(ctx.allocate(sizeof(SdpaParams)));
  if (kept == nullptr) return Error::OutOfMemory;
  *kept = p;
  memmove(ctx.state(), &kept, sizeof(kept));
  ctx.request_scratch(sizeof(float) * size_t(p.S));
  ctx.set_run(sdpa_run);
  return Error::Ok;
}

// float16 / bfloat16: staged through float32 (half_stage.h).
Error scaled_dot_product_attention_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return prepare_staged(ctx, args, scaled_dot_product_attention_prepare_f32, 1);
}

}  // namespace portable
}  // namespace tern
