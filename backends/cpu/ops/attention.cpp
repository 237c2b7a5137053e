// Scaled dot-product attention as one op (cpu.fbs, table Attention):
//
//   1. pack, for each (batch, kv head), k^T and v as GEMM weight panels
//      (ukernels.h's layout, zero bias) into the op's workspace, in parallel;
//   (with at most 8 query rows per kv head, as a generated token's step has,
//   run_rows instead reads k and v in place, without packing them;)
//   2. for each (batch, head, block of mr query rows), in parallel:
//      scores = q_rows k^T through the igemm microkernels into per-thread
//      scratch, then * scale + mask (or the causal cut), a softmax per row,
//      and y_rows = scores v through the same microkernels.
//
// The scores of a head never exist whole: a thread holds mr rows of them.
// Under a causal mask, a block of rows reads only the keys its last row sees.
// Each output row is computed by the same calls whatever the thread count.
//
// prepare_Attention checks the payload's table; run_attention is the op.
#include <cstring>

#include "backends/cpu/loader.h"

namespace tern {
namespace cpu {

namespace {

constexpr MinMax kNoClamp = {-__builtin_inff(), __builtin_inff()};
constexpr int64_t kAttnRows = 8;  // the most query rows per kv head run_rows takes (the attn microkernels' g)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Floats of the packed k^T of one (batch, kv head): s outputs of e inputs.
int64_t k_panel_floats(const AttentionGeometry& a) { return kPanel * (1 + a.e); }
int64_t k_floats(const AttentionGeometry& a) { return ceil_div(a.s, kPanel) * k_panel_floats(a); }
// ... and of its packed v: ev outputs of s inputs.
int64_t v_panel_floats(const AttentionGeometry& a) { return kPanel * (1 + a.s); }
int64_t v_floats(const AttentionGeometry& a) { return ceil_div(a.ev, kPanel) * v_panel_floats(a); }

// Floats from k's (or v's, width ev) first element to key j of (batch,
// kv head) bh: [batch, kv_heads, kv_rows, width] row-major (kv_rows >= s:
// a KV cache read in place), or [batch, s, kv_heads, width] when kv_seq_major.
int64_t key_offset(const AttentionGeometry& a, int64_t bh, int64_t j, int64_t width) {
  if (!a.kv_seq_major) return (bh * a.kv_rows + j) * width;
  const int64_t b = bh / a.kv_heads, h = bh % a.kv_heads;
  return ((b * a.s + j) * a.kv_heads + h) * width;
}

// scores[i][0, keys) for query rows q0 + i: * scale, + mask, softmax.
// Rows whose every score is -inf become zeros.
void softmax_rows(const AttentionGeometry& a, const Isa& isa, int64_t b, int64_t h, int64_t q0, int64_t rows,
                  int64_t keys, float* scores, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = scores + i * ld;
    const int64_t qi = q0 + i;
    const int64_t seen = a.causal ? (qi + 1 < keys ? qi + 1 : keys) : keys;
    for (int64_t j = 0; j < seen; ++j) row[j] *= a.scale;
    const int64_t mo = b * a.mask_strides[0] + h * a.mask_strides[1] + qi * a.mask_strides[2], ms = a.mask_strides[3];
    if (a.mask != nullptr) {
      const float* m = a.mask + mo;
      for (int64_t j = 0; j < seen; ++j) row[j] += m[j * ms];
    } else if (a.mask_bool != nullptr) {
      const uint8_t* m = a.mask_bool + mo;
      for (int64_t j = 0; j < seen; ++j) row[j] = m[j * ms] ? row[j] : -__builtin_inff();
    }
    float mx = -__builtin_inff();
    for (int64_t j = 0; j < seen; ++j) mx = row[j] > mx ? row[j] : mx;
    if (mx == -__builtin_inff()) {
      memset(row, 0, sizeof(float) * size_t(keys));
      continue;
    }
    for (int64_t j = 0; j < seen; ++j) row[j] -= mx;
    isa.vact(4, row, size_t(seen));  // exp
    float sum = 0.f;
    for (int64_t j = 0; j < seen; ++j) sum += row[j];
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < seen; ++j) row[j] *= inv;
    for (int64_t j = seen; j < keys; ++j) row[j] = 0.f;  // past the causal cut
  }
}

}  // namespace

int64_t attention_packed_floats(const AttentionGeometry& a) {
  return a.batch * a.kv_heads * (k_floats(a) + v_floats(a));
}

size_t attention_scratch_bytes(const AttentionGeometry& a, const Isa& isa) {
  const int64_t mr = isa.igemm_main.mr;
  const size_t packed = size_t(mr * round_up(a.s, kPanel)) * sizeof(float) + 2 * size_t(mr) * sizeof(float*);
  const size_t rows = size_t(kAttnRows * a.s) * sizeof(float);  // run_rows' scores
  return packed > rows ? packed : rows;
}

namespace {

// Few query rows (a generated token's step): each group of heads that
// shares a kv head (g = heads / kv_heads * l <= kAttnRows rows) reads its
// keys and values once, where they lie, through the attn_dots and attn_wsum
// microkernels: no packing, which would copy all of k and v for one row.
void run_rows(const AttentionOp& o, const Isa& isa, RunContext& ctx) {
  const AttentionGeometry& a = o.attention;
  const int64_t per_kv = a.heads / a.kv_heads, g = per_kv * a.l;
  const int64_t k_step = a.kv_seq_major ? a.kv_heads * a.e : a.e, v_step = a.kv_seq_major ? a.kv_heads * a.ev : a.ev;
  ctx.parallel_for(a.batch * a.kv_heads, 1, [&](RunContext& t, int64_t u0, int64_t u1) {
    float* scores = static_cast<float*>(t.scratch());  // g rows of s
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / a.kv_heads, h0 = (u % a.kv_heads) * per_kv;  // the group's first head
      const float* q = o.x + ((b * a.heads + h0) * a.l) * a.e;          // row r = (head h0 + r / l, query r % l)
      isa.attn_dots(size_t(g), size_t(a.s), size_t(a.e), q, size_t(a.e), a.k + key_offset(a, u, 0, a.e),
                    size_t(k_step), 1.f, scores, size_t(a.s));
      for (int64_t hh = 0; hh < per_kv; ++hh) softmax_rows(a, isa, b, h0 + hh, 0, a.l, a.s, scores + hh * a.l * a.s, a.s);
      isa.attn_wsum(size_t(g), size_t(a.s), size_t(a.ev), scores, size_t(a.s), a.v + key_offset(a, u, 0, a.ev),
                    size_t(v_step), o.y + ((b * a.heads + h0) * a.l) * a.ev, size_t(a.ev));
    }
  });
}

}  // namespace

void run_attention(const AttentionOp& o, const Isa& isa, RunContext& ctx) {
  const AttentionGeometry& a = o.attention;
  if (a.heads / a.kv_heads * a.l <= kAttnRows) return run_rows(o, isa, ctx);
  const int64_t kf = k_floats(a), vf = v_floats(a), kp = ceil_div(a.s, kPanel), vp = ceil_div(a.ev, kPanel);
  const int64_t heads_per_kv = a.heads / a.kv_heads;

  // 1. k^T and v as weight panels, per (batch, kv head): [k panels][v panels]
  ctx.parallel_for(a.batch * a.kv_heads * (kp + vp), 4, [&](RunContext&, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bh = u / (kp + vp), p = u % (kp + vp);
      float* base = a.packed + bh * (kf + vf);
      if (p < kp) {  // keys [16p, 16p + 16): panel[1 + c][j] = k[16p + j][c]
        const float* k = a.k + key_offset(a, bh, p * kPanel, a.e);
        const int64_t step = a.kv_seq_major ? a.kv_heads * a.e : a.e;  // from one key to the next
        const int64_t keys = a.s - p * kPanel < kPanel ? a.s - p * kPanel : kPanel;
        float* dst = base + p * k_panel_floats(a);
        memset(dst, 0, sizeof(float) * kPanel);
        // key by key: each key's e floats are read in one run (a seq-major
        // key is kv_heads * e floats from the next); the panel stays in L1
        for (int64_t j = 0; j < kPanel; ++j) {
          const float* key = k + j * step;
          float* col = dst + kPanel + j;
          if (j < keys) {
            for (int64_t c = 0; c < a.e; ++c) col[c * kPanel] = key[c];
          } else {
            for (int64_t c = 0; c < a.e; ++c) col[c * kPanel] = 0.f;
          }
        }
      } else {  // columns [16q, 16q + 16) of v: panel[1 + j][col] = v[j][16q + col]
        const int64_t q = p - kp, cols = a.ev - q * kPanel < kPanel ? a.ev - q * kPanel : kPanel;
        const float* v = a.v + key_offset(a, bh, 0, a.ev) + q * kPanel;
        const int64_t step = a.kv_seq_major ? a.kv_heads * a.ev : a.ev;
        float* dst = base + kf + q * v_panel_floats(a);
        memset(dst, 0, sizeof(float) * kPanel);
        for (int64_t j = 0; j < a.s; ++j) {
          float* row = dst + kPanel * (1 + j);
          const float* src = v + j * step;
          for (int64_t col = 0; col < kPanel; ++col) row[col] = col < cols ? src[col] : 0.f;
        }
      }
    }
  });

  // 2. blocks of mr query rows of every (batch, head)
  const int mr = isa.igemm_main.mr;
  const int64_t blocks = ceil_div(a.l, mr), ld = round_up(a.s, kPanel);
  ctx.parallel_for(a.batch * a.heads * blocks, grain_for(int64_t(1) << 16, {2 * mr, a.s, a.e + a.ev}),
                   [&](RunContext& t, int64_t u0, int64_t u1) {
    float* scores = static_cast<float*>(t.scratch());
    const float** ptrs = reinterpret_cast<const float**>(scores + mr * ld);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bh = u / blocks, q0 = (u % blocks) * mr, b = bh / a.heads, h = bh % a.heads;
      const int64_t rows = a.l - q0 < mr ? a.l - q0 : mr;
      const int64_t keys = a.causal ? (q0 + rows < a.s ? q0 + rows : a.s) : a.s;  // the block's last row sees these
      const float* packed = a.packed + (b * a.kv_heads + h / heads_per_kv) * (kf + vf);
      const float* q = o.x + (bh * a.l + q0) * a.e;
      for (int i = 0; i < mr; ++i) {
        ptrs[i] = q + (i < rows ? i : rows - 1) * a.e;
        ptrs[mr + i] = scores + (i < rows ? i : rows - 1) * ld;
      }
      igemm_columns(isa, rows, ptrs, a.e, 1, packed, k_panel_floats(a), 0, keys, scores, ld, nullptr, kNoClamp);
      softmax_rows(a, isa, b, h, q0, rows, keys, scores, ld);
      igemm_columns(isa, rows, ptrs + mr, keys, 1, packed + kf, v_panel_floats(a), 0, a.ev,
                    o.y + (bh * a.l + q0) * a.ev, a.ev, nullptr, kNoClamp);
    }
  });
}

Error prepare_Attention(Loader& ld, uint32_t oi, const fb::Attention& at, CpuOp* op) {
  AttentionOp* par = ld.params<AttentionOp>(op);
  if (par == nullptr) return Error::OutOfMemory;
  const ValueInfo *q = nullptr, *k = nullptr, *v = nullptr, *y = nullptr, *m = nullptr, *p = nullptr;
  TERN_CHECK_OK(ld.value(oi, at.q(), 0, false, &q));
  TERN_CHECK_OK(ld.value(oi, at.k(), 0, false, &k));
  TERN_CHECK_OK(ld.value(oi, at.v(), 0, false, &v));
  TERN_CHECK_OK(ld.value(oi, at.y(), 0, true, &y));
  TERN_CHECK_OK(ld.value(oi, at.packed(), 0, true, &p));
  if (at.mask() >= 0) TERN_CHECK_OK(ld.mask_value(oi, at.mask(), &m));
  AttentionGeometry& a = par->attention;
  const auto* ex = at.exprs();  // the size fields, in the table's order
  TERN_CHECK_OK(ld.field(oi, ex, 0, at.batch(), &a.batch));
  TERN_CHECK_OK(ld.field(oi, ex, 1, at.heads(), &a.heads));
  TERN_CHECK_OK(ld.field(oi, ex, 2, at.kv_heads(), &a.kv_heads));
  TERN_CHECK_OK(ld.field(oi, ex, 3, at.l(), &a.l));
  TERN_CHECK_OK(ld.field(oi, ex, 4, at.s(), &a.s));
  TERN_CHECK_OK(ld.field(oi, ex, 5, at.e(), &a.e));
  TERN_CHECK_OK(ld.field(oi, ex, 6, at.ev(), &a.ev));
  TERN_CHECK_OK(ld.sizes(oi, *op, "attention sizes do not fit q, k, v and y",
                         {{"batch", a.batch}, {"heads", a.heads}, {"kv_heads", a.kv_heads}, {"l", a.l}, {"s", a.s},
                          {"e", a.e}, {"ev", a.ev}},
                         int64_t(1) << 24));
  // with q, k, v and y within 2^40 elements, attention_packed_floats cannot overflow
  const char* failed = nullptr;
  a.kv_seq_major = at.kv_seq_major();
  TERN_CHECK_OK(ld.field(oi, ex, 7, at.kv_rows(), &a.kv_rows));
  if (a.kv_rows == 0) a.kv_rows = a.s;  // rows of k and v per (batch, kv head)
  TERN_CPU_NEED(failed, a.heads % a.kv_heads == 0);
  TERN_CPU_NEED(failed, a.kv_rows >= a.s);
  TERN_CPU_NEED(failed, a.kv_rows <= (int64_t(1) << 24));
  TERN_CPU_NEED(failed, !a.kv_seq_major || at.kv_rows() == 0);
  TERN_CPU_NEED(failed, q->numel == elements({a.batch, a.heads, a.l, a.e}));
  TERN_CPU_NEED(failed, k->numel == elements({a.batch, a.kv_heads, a.kv_rows, a.e}));
  TERN_CPU_NEED(failed, v->numel == elements({a.batch, a.kv_heads, a.kv_rows, a.ev}));
  TERN_CPU_NEED(failed, y->numel == elements({a.batch, a.heads, a.l, a.ev}));
  TERN_CPU_NEED(failed, std::isfinite(at.scale()));
  if (failed) return ld.refuse(failed, "op %u (%s): attention sizes do not fit q, k, v and y", oi, op->nodes);
  TERN_CPU_CHECK(ld, p->numel >= attention_packed_floats(a), "op %u: attention workspace of %lld floats, it needs %lld",
                 oi, (long long)p->numel, (long long)attention_packed_floats(a));
  // the mask broadcasts to [batch, heads, l, s], aligned on the right
  for (int d = 0; d < 4; ++d) a.mask_strides[d] = 0;
  if (m != nullptr) {
    const int64_t full[4] = {a.batch, a.heads, a.l, a.s};
    TERN_CPU_CHECK(ld, m->rank <= 4, "op %u: attention mask of rank %d (at most 4)", oi, m->rank);
    int64_t stride = 1;
    for (int d = m->rank - 1; d >= 0; --d) {
      const int fd = 4 - m->rank + d;
      TERN_CPU_CHECK(ld, m->sizes[d] == full[fd] || m->sizes[d] == 1,
                     "op %u: attention mask dim %d (%lld) does not broadcast to %lld", oi, d, (long long)m->sizes[d],
                     (long long)full[fd]);
      a.mask_strides[fd] = m->sizes[d] == 1 ? 0 : stride;
      stride *= m->sizes[d];
    }
  }
  a.k = k->data, a.v = v->data, a.packed = p->data;
  a.mask = m && !m->boolean ? m->data : nullptr;
  a.mask_bool = m && m->boolean ? reinterpret_cast<const uint8_t*>(m->data) : nullptr;
  a.scale = at.scale(), a.causal = at.causal();
  par->x = q->data, par->y = y->data, par->numel = y->numel;
  const size_t s = attention_scratch_bytes(a, ld.isa);
  ld.need_scratch(s);
  return Error::Ok;
}

void run_Attention(const CpuOp& op, const CpuProgram& p, RunContext& ctx) {
  run_attention(params_of<AttentionOp>(op), *p.isa, ctx);
}

}  // namespace cpu
}  // namespace tern
