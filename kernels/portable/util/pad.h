// Reflection and replication padding of the last 1, 2 or 3 dims, shared by
// aten::reflection_pad{1,2,3}d and aten::replication_pad{1,2,3}d
// (F.pad(mode="reflect" / "replicate")).
//
// args: [self, padding, out]. self is [c, spatial...] or [n, c, spatial...];
// padding holds (before, after) pairs starting from the LAST dim, as for
// constant_pad_nd: [l, r] (1d), [l, r, t, b] (2d), [l, r, t, b, f, k] (3d).
// Along each padded dim of size `in`, output index j reads input index
// (ATen's ReflectionPad / ReplicationPad::index in PaddingKernel.cpp)
//
//   reflect:    j < p ? 2p - j : j < in + p ? j : 2(in + p - 1) - j
//   replicate:  j < p ? p      : j < in + p ? j : in + p - 1
//   plus        max(0, -p) - max(0, p)
//
// with p = before. A negative pad crops first (the formulas then pad what
// is left). prepare computes these source indices once per dim and checks
// that each lies in [0, in), so run is a plain gather: out[..., od, oh, ow]
// = self[..., id[od], ih[oh], iw[ow]]. Elements are copied as bytes; the
// dtypes are those of ATen's CPU kernels (every integer and float type but
// bool).
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace portable {

enum class PadMode { Reflect, Replicate };

// prepare of the op padding the last `spatial` (1, 2 or 3) dims.
Error index_pad_prepare(PrepareContext& ctx, Span<EValue* const> args, int spatial, PadMode mode);

}  // namespace portable
}  // namespace tern
