// Size expressions (format 1.3): the integer expressions over a method's
// symbols (its dynamic dimensions) that give the sizes of tensors and the
// integer arguments of ops at the input shapes of each call. Stored in
// postfix as (opcode, operand) pairs; schema/tern.fbs (SizeExpr) lists the
// opcodes. In core, not format: backends evaluate their payloads' own
// expressions with it (the cpu backend's dynamic sizes, backends/cpu/loader.h).
//
//   // (s0 + 1) * 64:  push s0, push 1, add, push 64, mul
//   const int64_t code[] = {1, 0,  0, 1,  2, 0,  0, 64,  4, 0};
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

enum class ExprOp : int64_t {
  Const = 0, Symbol = 1, Add = 2, Sub = 3, Mul = 4, FloorDiv = 5, Mod = 6, Max = 7, Min = 8, CeilDiv = 9,
};
constexpr int64_t kNumExprOps = 10;
// The deepest stack an expression may use, and its longest code (pairs).
constexpr int kMaxExprStack = 16;
constexpr size_t kMaxExprLength = 256;

// Checks an untrusted expression: known opcodes, symbol operands below
// num_symbols, a stack that never underflows nor exceeds kMaxExprStack and
// ends with one value. On failure returns false and a reason in `why`.
bool size_expr_valid(const int64_t* code, size_t pairs, uint32_t num_symbols, const char** why);

// Evaluates a valid expression at `symbols`. False on overflow or a division
// by zero.
bool eval_size_expr(const int64_t* code, size_t pairs, const int64_t* symbols, int64_t* out);

}  // namespace tern
