// aten::log(Tensor self) -> Tensor
// args: [self, out]. out = ln(self); log(0) = -inf, log(x < 0) = NaN;
// integer and bool inputs give float32 (torch's int-to-float promotion).
#include <cmath>

#include "kernels/portable/util/unary.h"

namespace tern {
namespace portable {
namespace {

struct Log {
  template <typename T>
  static T apply(T x) {
    return std::log(x);
  }
};

}  // namespace

Error log_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return unary_prepare<UnaryDtypes::kFloatPromote, Log>(ctx, args);
}

}  // namespace portable
}  // namespace tern
