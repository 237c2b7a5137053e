// aten::bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor
// aten::bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out]. out = self | other (bitwise OR; logical for
// bool), on integer and bool operands (util/bitwise.h).
#include "kernels/portable/util/bitwise.h"

namespace tern {
namespace portable {
namespace {

struct BitwiseOr {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};

}  // namespace

Error bitwise_or_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return bitwise_prepare<BitwiseOr>(ctx, args, false);
}

Error bitwise_or_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return bitwise_prepare<BitwiseOr>(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
