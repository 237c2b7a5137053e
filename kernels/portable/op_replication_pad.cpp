// aten::replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor
// aten::replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor
// aten::replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor
// args: [self, padding, out]
//
// F.pad(mode="replicate"): the edge element is repeated
// ([a b c d], pad (2, 1) -> [a a a b c d d]); negative pads crop. One op at
// three ranks, so one file; util/pad.h does the work.
#include "kernels/portable/util/pad.h"

namespace tern {
namespace portable {

Error replication_pad1d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return index_pad_prepare(ctx, args, 1, PadMode::Replicate);
}

Error replication_pad2d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return index_pad_prepare(ctx, args, 2, PadMode::Replicate);
}

Error replication_pad3d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return index_pad_prepare(ctx, args, 3, PadMode::Replicate);
}

}  // namespace portable
}  // namespace tern
