// aten::bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor
// aten::bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor
// args: [self, other, out]. out = self ^ other (bitwise XOR; logical for
// bool), on integer and bool operands (util/bitwise.h).
#include "kernels/portable/util/bitwise.h"

namespace tern {
namespace portable {
namespace {

struct BitwiseXor {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a ^ b);
  }
};

}  // namespace

Error bitwise_xor_tensor_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return bitwise_prepare<BitwiseXor>(ctx, args, false);
}

Error bitwise_xor_scalar_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  return bitwise_prepare<BitwiseXor>(ctx, args, true);
}

}  // namespace portable
}  // namespace tern
