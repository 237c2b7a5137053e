// aten::log10(Tensor self) -> Tensor
// args: [self, out]. out = base-10 logarithm of self (-inf at 0, NaN below);
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Log10 {
  template <typename T>
  static T apply(T x) {
    return std::log10(x);
  }
};

}  // namespace

Error log10_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Log10>(ctx, args);
}

}  // namespace portable
}  // namespace tern
