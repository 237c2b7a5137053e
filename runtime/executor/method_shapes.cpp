// Dynamic shapes (format 1.3): a method whose inputs have dynamic dims
// (torch.export.Dim) plans memory for the dims' upper bounds. Its sizes, and
// the integer arguments that depend on them, are size expressions over the
// method's symbols. When set_input() changes an input's shape, the next
// execute() reads the symbols from the inputs, evaluates every expression,
// checks each tensor still fits its planned bytes and runs each affected
// kernel's prepare again (allocation-free: see PrepareContext::replay).
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/executor/method_internal.h"
#include "runtime/format/size_expr.h"
#include "runtime/format/verify.h"
#include "schema/tern_generated.h"

namespace tern {

namespace {

bool tensor_is_dynamic(const fb::Tensor& t) {
  if (t.dyn_sizes() == nullptr) return false;
  for (int32_t e : *t.dyn_sizes()) {
    if (e >= 0) return true;
  }
  return false;
}

bool ints_are_dynamic(const flatbuffers::Vector<int32_t>* exprs) {
  if (exprs == nullptr) return false;
  for (int32_t e : *exprs) {
    if (e >= 0) return true;
  }
  return false;
}

}  // namespace

bool value_is_dynamic(const fb::Method& fm, uint32_t vi) {
  const fb::EValue* v = fm.values()->Get(vi);
  switch (v->value_type()) {
    case fb::Value::Tensor: return tensor_is_dynamic(*v->value_as_Tensor());
    case fb::Value::Int: return v->value_as_Int()->expr() >= 0;
    case fb::Value::IntList: return ints_are_dynamic(v->value_as_IntList()->exprs());
    case fb::Value::TensorList:
      for (uint32_t item : *v->value_as_TensorList()->items()) {
        if (value_is_dynamic(fm, item)) return true;
      }
      return false;
    case fb::Value::OptionalTensorList:
      for (int32_t item : *v->value_as_OptionalTensorList()->items()) {
        if (item >= 0 && value_is_dynamic(fm, static_cast<uint32_t>(item))) return true;
      }
      return false;
    default: return false;
  }
}

bool instruction_is_dynamic(const fb::Method& fm, uint32_t ii) {
  const fb::Instruction* ins = fm.instructions()->Get(ii);
  switch (ins->kind_type()) {
    case fb::InstructionKind::KernelCall: {
      const auto* args = ins->kind_as_KernelCall()->args();
      for (uint32_t j = 0; args != nullptr && j < args->size(); ++j) {
        if (value_is_dynamic(fm, args->Get(j))) return true;
      }
      return false;
    }
    case fb::InstructionKind::Move:
      return value_is_dynamic(fm, ins->kind_as_Move()->from()) || value_is_dynamic(fm, ins->kind_as_Move()->to());
    case fb::InstructionKind::JumpFalse: return value_is_dynamic(fm, ins->kind_as_JumpFalse()->cond());
    default: return false;
  }
}

Error apply_shapes(const fb::Method& fm, Method::Shapes& s, EValue* values, bool assign_inputs) {
  const char* m = fm.name()->c_str();
  for (uint32_t e = 0; e < s.num_exprs; ++e) {
    const auto* code = fm.size_exprs()->Get(e)->code();
    if (!eval_size_expr(code->data(), code->size() / 2, s.symbols, &s.exprs[e])) {
      TERN_LOG_ERROR("method '%s': size expression %u overflows or divides by zero at these input sizes", m, e);
      return Error::InvalidArgument;
    }
  }
  for (uint32_t k = 0; k < s.num_tensors; ++k) {
    const uint32_t vi = s.tensors[k];
    const auto* dyn = fm.values()->Get(vi)->value_as_Tensor()->dyn_sizes();
    Tensor& t = values[vi].tensor;
    int64_t sizes[kMaxDims];
    int64_t numel = 1;
    for (int d = 0; d < t.dim; ++d) {
      const int32_t e = dyn->Get(static_cast<uint32_t>(d));
      sizes[d] = e < 0 ? t.sizes[d] : s.exprs[e];
      if (sizes[d] < 0 || __builtin_mul_overflow(numel, sizes[d], &numel)) numel = -1;
      if (numel < 0) break;
    }
    if (numel < 0 || numel > s.capacity[k]) {
      TERN_LOG_ERROR("method '%s': value %u does not fit its planned memory at these input sizes "
                     "(%lld elements, %lld planned)", m, vi, (long long)numel, (long long)s.capacity[k]);
      return Error::InvalidArgument;
    }
    const bool input = s.tensor_input[k] >= 0;
    if (input && !assign_inputs) {
      for (int d = 0; d < t.dim; ++d) {
        if (t.sizes[d] != sizes[d]) {
          TERN_LOG_ERROR("method '%s': input %d dim %d is %lld, but the other input sizes make it %lld",
                         m, s.tensor_input[k], d, (long long)t.sizes[d], (long long)sizes[d]);
          return Error::InvalidArgument;
        }
      }
      continue;
    }
    memcpy(t.sizes, sizes, sizeof(int64_t) * static_cast<size_t>(t.dim));
    t.numel = numel;
  }
  for (uint32_t k = 0; k < s.num_ints; ++k) {
    values[s.ints[k]].i = s.exprs[fm.values()->Get(s.ints[k])->value_as_Int()->expr()];
  }
  for (uint32_t k = 0; k < s.num_lists; ++k) {
    const auto* exprs = fm.values()->Get(s.lists[k])->value_as_IntList()->exprs();
    for (uint32_t j = 0; j < exprs->size(); ++j) {
      if (exprs->Get(j) >= 0) s.list_items[k][j] = s.exprs[exprs->Get(j)];
    }
  }
  return Error::Ok;
}

Error Method::update_shapes() {
  Shapes& s = *shapes_;
  for (uint32_t si = 0; si < s.num_symbols; ++si) {
    s.symbols[si] = values_[inputs_[s.symbol_input[si]]].tensor.sizes[s.symbol_dim[si]];
  }
  TERN_CHECK_OK(apply_shapes(*fb_, s, values_, /*assign_inputs=*/false));
  for (uint32_t k = 0; k < s.num_instrs; ++k) {
    const uint32_t ii = s.instrs[k];
    Instr& in = instrs_[ii];
    if (in.kind == Instr::Kind::Move) {
      const EValue& from = values_[in.a];
      if (from.tag == Tag::Tensor && !tensor_same_shape(from.tensor, values_[in.b].tensor)) {
        TERN_LOG_ERROR("method '%s' instruction %u: a move between tensors of different shapes at these "
                       "input sizes", name_, ii);
        return Error::InvalidArgument;
      }
      continue;
    }
    if (in.kind == Instr::Kind::JumpFalse) {
      const EValue& c = values_[in.a];
      if (c.tag == Tag::Tensor && c.tensor.numel != 1) {
        TERN_LOG_ERROR("method '%s' instruction %u: the jump condition has %lld elements at these input sizes",
                       name_, ii, (long long)c.tensor.numel);
        return Error::InvalidArgument;
      }
      continue;
    }
    if (in.kind != Instr::Kind::Kernel) continue;
    const auto* args = fb_->instructions()->Get(ii)->kind_as_KernelCall()->args();
    PrepareContext ctx(in.kernel->name, ii, nullptr, threads_);
    ctx.replay(s.blocks + size_t(k) * PrepareContext::kMaxBlocks, s.num_blocks[k]);
    Error e = in.kernel->prepare(ctx, Span<EValue* const>(in.args, args ? args->size() : 0));
    if (e == Error::Ok && ctx.scratch() > scratch_bytes_) {
      e = ctx.fail(Error::MemoryTooSmall, "needs %zu bytes of scratch at these shapes, %zu reserved at load",
                   ctx.scratch(), scratch_bytes_);
    }
    if (e != Error::Ok) {
      TERN_LOG_ERROR("method '%s' instruction %u (%s, node %s) at these input sizes: %s", name_, ii,
                     in.kernel->name, instruction_node(ii), ctx.message()[0] ? ctx.message() : error_name(e));
      return e == Error::OperatorMissing ? Error::InvalidArgument : e;
    }
    in.run = ctx.run();
    memcpy(in.state, ctx.state_bytes(), sizeof(in.state));
  }
  s.dirty = false;
  return Error::Ok;
}

Error Method::resize_input(size_t i, const Tensor& src) {
  Tensor& t = values_[inputs_[i]].tensor;
  const fb::Tensor* ft = fb_->values()->Get(inputs_[i])->value_as_Tensor();
  if (src.dtype != t.dtype || src.dim != t.dim) {
    TERN_LOG_ERROR("method '%s': input %zu must be %s with %d dims, got %s with %d dims", name_, i,
                   scalar_type_name(t.dtype), t.dim, scalar_type_name(src.dtype), src.dim);
    return Error::InvalidArgument;
  }
  const auto* dyn = ft->dyn_sizes();
  for (int d = 0; d < t.dim; ++d) {
    const int32_t e = dyn && dyn->size() ? dyn->Get(static_cast<uint32_t>(d)) : -1;
    const int64_t sym = e >= 0 ? size_expr_is_symbol(*fb_, e) : -1;
    const int64_t n = src.sizes[d];
    if (e < 0 && n != ft->sizes()->Get(static_cast<uint32_t>(d))) {
      TERN_LOG_ERROR("method '%s': input %zu dim %d must be %lld, got %lld", name_, i, d,
                     (long long)ft->sizes()->Get(static_cast<uint32_t>(d)), (long long)n);
      return Error::InvalidArgument;
    }
    if (sym >= 0 && (n < shapes_->symbol_min[sym] || n > shapes_->symbol_max[sym])) {
      TERN_LOG_ERROR("method '%s': input %zu dim %d is %lld, outside %lld..%lld, the range of '%s' it was "
                     "exported with", name_, i, d, (long long)n, (long long)shapes_->symbol_min[sym],
                     (long long)shapes_->symbol_max[sym], fb_->symbols()->Get(static_cast<uint32_t>(sym))->name()->c_str());
      return Error::InvalidArgument;
    }
    if (e >= 0 && sym < 0 && (n < 0 || n > ft->sizes()->Get(static_cast<uint32_t>(d)))) {
      TERN_LOG_ERROR("method '%s': input %zu dim %d is %lld, outside 0..%lld, its exported range", name_, i,
                     d, (long long)n, (long long)ft->sizes()->Get(static_cast<uint32_t>(d)));
      return Error::InvalidArgument;
    }
  }
  if (!tensor_same_shape(src, t)) {
    t.numel = 1;
    for (int d = 0; d < t.dim; ++d) t.numel *= (t.sizes[d] = src.sizes[d]);  // each within its bound
    shapes_->dirty = true;
  }
  return Error::Ok;
}

bool Method::input_is_dynamic(size_t i) const {
  return shapes_ != nullptr && i < num_inputs_ && value_is_dynamic(*fb_, inputs_[i]);
}

}  // namespace tern
