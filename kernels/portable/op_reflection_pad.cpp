// aten::reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor
// aten::reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor
// aten::reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor
// args: [self, padding, out]
//
// F.pad(mode="reflect"): the edge is mirrored without repeating it
// ([a b c d], pad (2, 1) -> [c b a b c d c]); each pad must be less than its
// dim. One op at three ranks, so one file; util/pad.h does the work.
#include "kernels/portable/util/pad.h"

namespace tern {
namespace portable {

Error reflection_pad1d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return index_pad_prepare(ctx, args, 1, PadMode::Reflect);
}

Error reflection_pad2d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return index_pad_prepare(ctx, args, 2, PadMode::Reflect);
}

Error reflection_pad3d_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return index_pad_prepare(ctx, args, 3, PadMode::Reflect);
}

}  // namespace portable
}  // namespace tern
