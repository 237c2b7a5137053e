#include "runtime/core/size_expr.h"

namespace tern {

bool size_expr_valid(const int64_t* code, size_t pairs, uint32_t num_symbols, const char** why) {
  if (pairs == 0 || pairs > kMaxExprLength) {
    *why = "empty or longer than 256 steps";
    return false;
  }
  int depth = 0;
  for (size_t i = 0; i < pairs; ++i) {
    const int64_t op = code[2 * i], arg = code[2 * i + 1];
    if (op < 0 || op >= kNumExprOps) {
      *why = "unknown opcode";
      return false;
    }
    if (op == static_cast<int64_t>(ExprOp::Symbol) && (arg < 0 || arg >= static_cast<int64_t>(num_symbols))) {
      *why = "symbol out of range";
      return false;
    }
    if (op <= static_cast<int64_t>(ExprOp::Symbol)) {
      if (++depth > kMaxExprStack) {
        *why = "stack deeper than 16";
        return false;
      }
    } else if (--depth < 1) {
      *why = "stack underflow";
      return false;
    }
  }
  if (depth != 1) {
    *why = "does not end with one value";
    return false;
  }
  return true;
}

namespace {

// Python's floor division and modulo; false for b == 0 or INT64_MIN / -1.
bool floor_divmod(int64_t a, int64_t b, int64_t* q, int64_t* r) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  *q = a / b;
  *r = a % b;
  if (*r != 0 && ((*r < 0) != (b < 0))) {
    *q -= 1;
    *r += b;
  }
  return true;
}

}  // namespace

bool eval_size_expr(const int64_t* code, size_t pairs, const int64_t* symbols, int64_t* out) {
  int64_t stack[kMaxExprStack];
  int top = 0;
  for (size_t i = 0; i < pairs; ++i) {
    const ExprOp op = static_cast<ExprOp>(code[2 * i]);
    const int64_t arg = code[2 * i + 1];
    if (op == ExprOp::Const || op == ExprOp::Symbol) {
      stack[top++] = op == ExprOp::Const ? arg : symbols[arg];
      continue;
    }
    const int64_t b = stack[--top], a = stack[top - 1];
    int64_t r, q, m;
    switch (op) {
      case ExprOp::Add: if (__builtin_add_overflow(a, b, &r)) return false; break;
      case ExprOp::Sub: if (__builtin_sub_overflow(a, b, &r)) return false; break;
      case ExprOp::Mul: if (__builtin_mul_overflow(a, b, &r)) return false; break;
      case ExprOp::FloorDiv: if (!floor_divmod(a, b, &q, &m)) return false; r = q; break;
      case ExprOp::Mod: if (!floor_divmod(a, b, &q, &m)) return false; r = m; break;
      case ExprOp::Max: r = a > b ? a : b; break;
      case ExprOp::Min: r = a < b ? a : b; break;
      case ExprOp::CeilDiv:  // ceil(a / b) = -floor(-a / b)
        if (a == INT64_MIN || !floor_divmod(-a, b, &q, &m)) return false;
        r = -q;
        break;
      default: return false;
    }
    stack[top - 1] = r;
  }
  *out = stack[0];
  return true;
}

}  // namespace tern
