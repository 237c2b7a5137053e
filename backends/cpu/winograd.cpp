// Winograd F(2x2, 3x3) (cpu.fbs, WinogradInput / WinogradOutput): the input
// and output transforms around the 16 1x1 convolutions (the igemm
// microkernels) that make a 3x3 stride-1 convolution. With
//
//   B^T = | 1  0 -1  0 |    A^T = | 1  1  1  0 |    G = | 1    0    0   |
//         | 0  1  1  0 |          | 0  1 -1 -1 |        | 1/2  1/2  1/2 |
//         | 0 -1  1  0 |                               | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |                               | 0    0    1   |
//
// a 2 x 2 output tile is A^T [(G g G^T) . (B^T d B)] A for its 4 x 4 input
// patch d and the 3 x 3 kernel g (G g G^T is computed at export,
// python/tern/backends/cpu/compile.py). v and m hold element t of every
// tile together (16 blocks of [tiles][channels], 16 floats apart so that
// the 16 rows a transform touches do not fall in the same cache sets), so
// each of the 16 GEMMs reads and writes contiguous rows. The transforms are microkernels
// (ukernels/common/f32_winograd.h); each tile is done by one thread: the
// same bits for any thread count.
#include <cstring>

#include "backends/cpu/program.h"

namespace tern {
namespace cpu {
namespace {

constexpr int64_t kMinTilesPerThread = 8;

int64_t tiles_of(int64_t size) { return (size + 1) / 2; }

}  // namespace

int64_t winograd_block(int64_t tiles, int64_t channels) { return tiles * channels + 16; }

size_t winograd_scratch_bytes(int64_t oc) { return size_t(oc) * sizeof(float); }

void run_winograd_input(const CpuOp& o, const Isa& isa, const float* zeros, RunContext& ctx) {
  const ConvGeometry& g = o.conv;
  const int64_t th = tiles_of(g.oh), tw = tiles_of(g.ow), tiles = g.n * th * tw;
  ctx.parallel_for(tiles, kMinTilesPerThread, [&](RunContext&, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (th * tw), i = (t / tw) % th, j = t % tw;
      const float* in[16];
      for (int r = 0; r < 4; ++r) {
        const int64_t iy = 2 * i - g.ph + r;
        for (int s = 0; s < 4; ++s) {
          const int64_t ix = 2 * j - g.pw + s;
          in[4 * r + s] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? o.x + ((b * g.h + iy) * g.w + ix) * g.c : zeros;
        }
      }
      isa.winograd_in(in, size_t(g.c), o.y + t * g.c, size_t(winograd_block(tiles, g.c)));
    }
  });
}

void run_winograd_output(const CpuOp& o, const Isa& isa, const float* zeros, RunContext& ctx) {
  const ConvGeometry& g = o.conv;
  const int64_t th = tiles_of(g.oh), tw = tiles_of(g.ow), tiles = g.n * th * tw, oc = g.oc;
  const Epilogue& ep = o.ep;
  const bool clamp = ep.activation == Activation::Clamp;
  const MinMax mm = clamp ? ep.clamp : MinMax{-__builtin_inff(), __builtin_inff()};
  ctx.parallel_for(tiles, kMinTilesPerThread, [&](RunContext& c, int64_t t0, int64_t t1) {
    float* spare = static_cast<float*>(c.scratch());  // outputs past y's edge go here
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (th * tw), i = (t / tw) % th, j = t % tw;
      float* out[4];
      const float* res[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t oy = 2 * i + k / 2, ox = 2 * j + k % 2;
        const bool inside = oy < g.oh && ox < g.ow;
        const int64_t at = ((b * g.oh + oy) * g.ow + ox) * oc;
        out[k] = inside ? o.y + at : spare;
        res[k] = inside && o.x2 ? o.x2 + at : zeros;
      }
      isa.winograd_out(o.x + t * oc, size_t(winograd_block(tiles, oc)), size_t(oc), o.bias ? o.bias : zeros, out, res, mm);
      if (!clamp && ep.activation != Activation::None) {
        for (int k = 0; k < 4; ++k)
          if (out[k] != spare) apply_activation(ep, out[k], size_t(oc));
      }
    }
  });
}

}  // namespace cpu
}  // namespace tern
