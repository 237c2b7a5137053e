// aten::log2(Tensor self) -> Tensor
// args: [self, out]. out = base-2 logarithm of self (-inf at 0, NaN below);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Log2 {
  template <typename T>
  static T apply(T x) {
    return std::log2(x);
  }
};

}  // namespace

Error log2_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Log2>(ctx, args);
}

}  // namespace portable
}  // namespace tern
