// aten::bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor
// aten::bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out]. out = self & other (bitwise AND; logical for
// bool), on integer and bool operands (util/bitwise.h).
#include "kernels/portable/util/bitwise.h"

namespace tern {
namespace portable {
namespace {

struct BitwiseAnd {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};

}  // namespace

Error bitwise_and_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return bitwise_prepare<BitwiseAnd>(ctx, args, false);
}

Error bitwise_and_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return bitwise_prepare<BitwiseAnd>(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
