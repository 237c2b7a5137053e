// tern::gguf_dequantize(Tensor rows, int format, int k) -> Tensor
//   args: [rows, format, k, out]
//   A weight in one of GGUF's formats (llama.cpp's blocks, stored as they
//   are): rows uint8 [..., row_bytes], each row k elements in blocks one
//   after the other; out float32 [..., k]. format is GGML's type number:
//     F32  (0)  float32 each                     the float
//     F16  (1)  float16 each                     the half, exactly
//     Q4_0 (2)  32 a block: d f16, 16 bytes q     d * (nib(j) - 8)
//     Q4_1 (3)  32 a block: d f16, m f16, 16 q    d * nib(j) + m
//     Q8_0 (8)  32 a block: d f16, 32 int8 q      d * q[j]
//   nib(j): the low half of q[j] for j < 16, the high half of q[j - 16]
//   after. One float multiply (then one add for Q4_1), as
//   python/tern/llm/blocks.py (the eager reference) computes it.
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/half.h"

namespace tern {
namespace portable {
namespace {

constexpr int64_t kGrain = 1 << 14;

struct Format {
  int code;
  int64_t block, bytes;
};
constexpr Format kFormats[] = {{0, 1, 4}, {1, 1, 2}, {2, 32, 18}, {3, 32, 20}, {8, 32, 34}};

const Format* format_of(int64_t code) {
  for (const Format& f : kFormats) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

float half_at(const uint8_t* p) { return half_bits_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// One row of k elements from its bytes.
void dequantize_row(int code, const uint8_t* row, int64_t k, float* y) {
  switch (code) {
    case 0: memcpy(y, row, size_t(k) * sizeof(float)); return;
    case 1:
      for (int64_t i = 0; i < k; ++i) y[i] = half_at(row + 2 * i);
      return;
    default: break;
  }
  const Format& f = *format_of(code);
  for (int64_t b = 0; b < k / 32; ++b, row += f.bytes, y += 32) {
    const float d = half_at(row);
    if (code == 8) {
      for (int j = 0; j < 32; ++j) y[j] = d * float(static_cast<int8_t>(row[2 + j]));
      continue;
    }
    const float m = code == 3 ? half_at(row + 2) : 0.0f;
    const uint8_t* q = row + (code == 3 ? 4 : 2);
    for (int j = 0; j < 16; ++j) {
      const int lo = q[j] & 0xF, hi = q[j] >> 4;
      if (code == 2) {
        y[j] = d * float(lo - 8);
        y[j + 16] = d * float(hi - 8);
      } else {
        y[j] = d * float(lo) + m;
        y[j + 16] = d * float(hi) + m;
      }
    }
  }
}

struct State {
  int code;
  int64_t k, row_bytes;
};

Error gguf_dequantize_run(RunContext& ctx, EValue* const* args) {
  State s;
  memcpy(&s, ctx.state(), sizeof(s));
  const Tensor& out = args[3]->tensor;
  const uint8_t* rows = static_cast<const uint8_t*>(args[0]->tensor.data);
  float* y = out.data_as<float>();
  const int64_t n = s.k == 0 ? 0 : out.numel / s.k;
  ctx.parallel_for(n, grain_for(kGrain, {s.k}), [&](RunContext&, int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) dequantize_row(s.code, rows + r * s.row_bytes, s.k, y + r * s.k);
  });
  return Error::Ok;
}

}  // namespace

Error gguf_dequantize_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 4));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  const Tensor& rows = args[0]->tensor;
  const Tensor& out = args[3]->tensor;
  TERN_CHECK_OK(expect_dtype(ctx, rows, "rows", ScalarType::UInt8));
  TERN_CHECK_OK(expect_dtype(ctx, out, "out", ScalarType::Float32));
  if (!args[1]->is_int() || !args[2]->is_int()) return ctx.fail(Error::InvalidProgram, "format and k must be ints");
  const Format* f = format_of(args[1]->i);
  if (f == nullptr) {
    return ctx.fail(Error::InvalidProgram, "format %lld is none of F32 (0), F16 (1), Q4_0 (2), Q4_1 (3), Q8_0 (8)",
                    (long long)args[1]->i);
  }
  const int64_t k = args[2]->i;
  if (rows.dim < 1 || k < 1 || k > (int64_t(1) << 32) || k % f->block != 0) {
    return ctx.fail(Error::InvalidProgram, "k %lld: a positive multiple of the format's %lld-element block, with "
                    "rows of at least one dim", (long long)k, (long long)f->block);
  }
  const int64_t row_bytes = k / f->block * f->bytes;
  if (rows.sizes[rows.dim - 1] != row_bytes) {
    return ctx.fail(Error::InvalidProgram, "rows of %lld elements in format %d take %lld bytes, not %lld",
                    (long long)k, f->code, (long long)row_bytes, (long long)rows.sizes[rows.dim - 1]);
  }
  int64_t sizes[kMaxDims];
  for (int d = 0; d < rows.dim; ++d) sizes[d] = rows.sizes[d];
  sizes[rows.dim - 1] = k;  // out's numel: the verifier bounded out's own sizes
  TERN_CHECK_OK(expect_sizes(ctx, out, "out", sizes, rows.dim));
  const State s{f->code, k, row_bytes};
  static_assert(sizeof(State) <= PrepareContext::kStateBytes, "State fits the inline state");
  memcpy(ctx.state(), &s, sizeof(s));
  ctx.set_run(gguf_dequantize_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
