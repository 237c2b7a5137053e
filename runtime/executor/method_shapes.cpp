// Dynamic shapes (format 1.3): a method whose inputs have dynamic dims
// (torch.export.Dim) plans memory for the dims' upper bounds. Its sizes, and
// the integer arguments that depend on them, are size expressions over the
// method's symbols. When set_input() changes an input's shape, the next
// execute() reads the symbols from the inputs, evaluates every expression,
// checks each tensor still fits its planned bytes and runs each affected
// kernel's prepare again (allocation-free: see PrepareContext::replay) and
// each affected delegate's Backend::reshape.
#include <cstdint>
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/overflow.h"
#include "runtime/core/size_expr.h"
#include "runtime/executor/method_internal.h"
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

// A delegate reading or writing a value of dynamic sizes (verified: the
// delegate and its values in range).
bool delegate_is_dynamic(const fb::Method& fm, uint32_t di) {
  const fb::Delegate& d = *fm.delegates()->Get(di);
  for (const auto* list : {d.inputs(), d.outputs()}) {
    for (uint32_t j = 0; list != nullptr && j < list->size(); ++j) {
      if (value_is_dynamic(fm, list->Get(j))) return true;
    }
  }
  return false;
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
    case fb::InstructionKind::BackendCall: return delegate_is_dynamic(fm, ins->kind_as_BackendCall()->delegate());
    default: return false;
  }
}

// The elements of a tensor of these sizes, or -1 if a size is negative or
// the sizes, each 0 taken as 1, span more than 2^48 elements (the verifier's
// bound on planned tensors): then no product of sizes overflows, not even a
// stride of an empty tensor.
int64_t checked_numel(const int64_t* sizes, int dim) {
  uint64_t numel = 0;
  const int bad = checked_span(dim, [&](int d) { return sizes[d]; }, 1, uint64_t(1) << 48, &numel);
  return bad >= 0 ? -1 : static_cast<int64_t>(numel);
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
    for (int d = 0; d < t.dim; ++d) {
      const int32_t e = dyn->Get(static_cast<uint32_t>(d));
      sizes[d] = e < 0 ? t.sizes[d] : s.exprs[e];
    }
    const int64_t numel = checked_numel(sizes, t.dim);
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

}  // namespace

// A delegate's backend sizes its subgraph again (Backend::reshape): its
// tensors hold the new sizes already.
Error Method::Shapes::reshape_delegate(Method& m, uint32_t ii, uint32_t di) {
  const fb::Delegate& fd = *m.fb_->delegates()->Get(di);
  const Delegate& d = m.delegates_[di];
  const uint32_t ni = fd.inputs() ? fd.inputs()->size() : 0, no = fd.outputs() ? fd.outputs()->size() : 0;
  PrepareContext ctx(d.backend->name(), di, nullptr, m.threads_);
  Error e = d.backend->reshape(ctx, d.handle, Span<EValue* const>(d.args, ni), Span<EValue* const>(d.args + ni, no));
  if (e == Error::Ok && ctx.scratch() > m.scratch_bytes_) {
    e = ctx.fail(Error::MemoryTooSmall, "needs %zu bytes of scratch at these shapes, %zu reserved at load",
                 ctx.scratch(), m.scratch_bytes_);
  }
  if (e != Error::Ok) {
    TERN_LOG_ERROR("method '%s' instruction %u (backend %s, delegate %u) at these input sizes: %s", m.name_, ii,
                   d.backend->name(), di, ctx.message()[0] ? ctx.message() : error_name(e));
  }
  return e;
}

Error Method::Shapes::update(Method& m) {
  Shapes& s = *m.shapes_;
  for (uint32_t si = 0; si < s.num_symbols; ++si) {
    s.symbols[si] = m.values_[m.inputs_[s.symbol_input[si]]].tensor.sizes[s.symbol_dim[si]];
  }
  TERN_CHECK_OK(apply_shapes(*m.fb_, s, m.values_, /*assign_inputs=*/false));
  for (uint32_t k = 0; k < s.num_instrs; ++k) {
    const uint32_t ii = s.instrs[k];
    Instr& in = m.instrs_[ii];
    if (in.kind == Instr::Kind::Move) {
      const EValue& from = m.values_[in.a];
      if (from.tag == Tag::Tensor && !tensor_same_shape(from.tensor, m.values_[in.b].tensor)) {
        TERN_LOG_ERROR("method '%s' instruction %u: a move between tensors of different shapes at these "
                       "input sizes", m.name_, ii);
        return Error::InvalidArgument;
      }
      continue;
    }
    if (in.kind == Instr::Kind::JumpFalse) {
      const EValue& c = m.values_[in.a];
      if (c.tag == Tag::Tensor && c.tensor.numel != 1) {
        TERN_LOG_ERROR("method '%s' instruction %u: the jump condition has %lld elements at these input sizes",
                       m.name_, ii, (long long)c.tensor.numel);
        return Error::InvalidArgument;
      }
      continue;
    }
    if (in.kind == Instr::Kind::BackendCall) {
      TERN_CHECK_OK(reshape_delegate(m, ii, in.a));
      continue;
    }
    if (in.kind != Instr::Kind::Kernel) continue;
    const auto* args = m.fb_->instructions()->Get(ii)->kind_as_KernelCall()->args();
    PrepareContext ctx(in.kernel->name, ii, nullptr, m.threads_);
    ctx.replay(s.blocks + size_t(k) * PrepareContext::kMaxBlocks, s.num_blocks[k]);
    Error e = in.kernel->prepare(ctx, Span<EValue* const>(in.args, args ? args->size() : 0));
    if (e == Error::Ok && ctx.scratch() > m.scratch_bytes_) {
      e = ctx.fail(Error::MemoryTooSmall, "needs %zu bytes of scratch at these shapes, %zu reserved at load",
                   ctx.scratch(), m.scratch_bytes_);
    }
    if (e != Error::Ok) {
      TERN_LOG_ERROR("method '%s' instruction %u (%s, node %s) at these input sizes: %s", m.name_, ii,
                     in.kernel->name, m.instruction_node(ii), ctx.message()[0] ? ctx.message() : error_name(e));
      return e == Error::OperatorMissing ? Error::InvalidArgument : e;
    }
    in.run = ctx.run();
    memcpy(in.state, ctx.state_bytes(), sizeof(in.state));
  }
  s.dirty = false;
  return Error::Ok;
}

Error Method::Shapes::resize_input(Method& m, size_t i, const Tensor& src) {
  Tensor& t = m.values_[m.inputs_[i]].tensor;
  const fb::Tensor* ft = m.fb_->values()->Get(m.inputs_[i])->value_as_Tensor();
  if (src.dtype != t.dtype || src.dim != t.dim) {
    TERN_LOG_ERROR("method '%s': input %zu must be %s with %d dims, got %s with %d dims", m.name_, i,
                   scalar_type_name(t.dtype), t.dim, scalar_type_name(src.dtype), src.dim);
    return Error::InvalidArgument;
  }
  const auto* dyn = ft->dyn_sizes();
  for (int d = 0; d < t.dim; ++d) {
    const int32_t e = dyn && dyn->size() ? dyn->Get(static_cast<uint32_t>(d)) : -1;
    const int64_t sym = e >= 0 ? size_expr_is_symbol(*m.fb_, e) : -1;
    const int64_t n = src.sizes[d];
    if (e < 0 && n != ft->sizes()->Get(static_cast<uint32_t>(d))) {
      TERN_LOG_ERROR("method '%s': input %zu dim %d must be %lld, got %lld", m.name_, i, d,
                     (long long)ft->sizes()->Get(static_cast<uint32_t>(d)), (long long)n);
      return Error::InvalidArgument;
    }
    if (sym >= 0 && (n < m.shapes_->symbol_min[sym] || n > m.shapes_->symbol_max[sym])) {
      TERN_LOG_ERROR("method '%s': input %zu dim %d is %lld, outside %lld..%lld, the range of '%s' it was "
                     "exported with", m.name_, i, d, (long long)n, (long long)m.shapes_->symbol_min[sym],
                     (long long)m.shapes_->symbol_max[sym], m.fb_->symbols()->Get(static_cast<uint32_t>(sym))->name()->c_str());
      return Error::InvalidArgument;
    }
    if (e >= 0 && sym < 0 && (n < 0 || n > ft->sizes()->Get(static_cast<uint32_t>(d)))) {
      TERN_LOG_ERROR("method '%s': input %zu dim %d is %lld, outside 0..%lld, its exported range", m.name_, i,
                     d, (long long)n, (long long)ft->sizes()->Get(static_cast<uint32_t>(d)));
      return Error::InvalidArgument;
    }
  }
  // Each dim is within its bound, but the bounds of different dims need not
  // hold together (a symbol's max can exceed the dim's planned size): the
  // elements must fit the planned ones before set_input copies them.
  int64_t planned = 1;
  for (int d = 0; d < t.dim; ++d) planned *= ft->sizes()->Get(static_cast<uint32_t>(d));  // verified: no overflow
  const int64_t numel = checked_numel(src.sizes, src.dim);
  if (numel < 0 || numel > planned) {
    TERN_LOG_ERROR("method '%s': input %zu has more elements than the %lld planned for it at these sizes",
                   m.name_, i, (long long)planned);
    return Error::InvalidArgument;
  }
  if (!tensor_same_shape(src, t)) {
    for (int d = 0; d < t.dim; ++d) t.sizes[d] = src.sizes[d];
    t.numel = numel;
    m.shapes_->dirty = true;
  }
  return Error::Ok;
}

namespace {

uint32_t count(const flatbuffers::Vector<uint32_t>* v) { return v ? v->size() : 0; }

const fb::Tensor* tensor_of(const fb::Method& method, uint32_t vi) {
  return vi < method.values()->size() ? method.values()->Get(vi)->value_as_Tensor() : nullptr;
}

constexpr uint32_t kMaxStateName = 256;  // symbol names, as state names (verify.cpp)

// Dynamic shapes (format 1.3): bounded symbols, valid expressions, and every
// reference to an expression (tensor dims, Int and IntList items) in range.
// A dynamic tensor is planned (its sizes are the upper bound the plan holds)
// or empty; each symbol is exactly the size of some input dim, where
// execute() reads it from.
constexpr int64_t kMaxSymbolValue = int64_t(1) << 40;

Error verify(const fb::Method& method) {
  const char* m = method.name()->c_str();
  const uint32_t num_symbols = method.symbols() ? method.symbols()->size() : 0;
  const uint32_t num_exprs = method.size_exprs() ? method.size_exprs()->size() : 0;
  for (uint32_t i = 0; i < num_symbols; ++i) {
    const fb::Symbol* s = method.symbols()->Get(i);
    if (s->name() == nullptr || s->name()->size() > kMaxStateName) {
      return invalid_program("method '%s' symbol %u: name missing or longer than %u bytes", m, i, kMaxStateName);
    }
    if (s->min() < 0 || s->min() > s->max() || s->max() > kMaxSymbolValue) {
      return invalid_program("method '%s' symbol %u (%s): bounds %lld..%lld are not 0 <= min <= max <= 2^40", m, i,
                     s->name()->c_str(), (long long)s->min(), (long long)s->max());
    }
  }
  for (uint32_t i = 0; i < num_exprs; ++i) {
    const auto* code = method.size_exprs()->Get(i)->code();
    const char* why = "no code";
    if (code == nullptr || !items_aligned(code) || code->size() % 2 != 0 ||
        !size_expr_valid(code->data(), code->size() / 2, num_symbols, &why)) {
      return invalid_program("method '%s' size expression %u: %s", m, i, code && code->size() % 2 ? "odd length" : why);
    }
  }
  // verify_method checked the references to expressions (count and range).
  for (uint32_t vi = 0; vi < method.values()->size(); ++vi) {
    const fb::Tensor* t = method.values()->Get(vi)->value_as_Tensor();
    if (t == nullptr || t->dyn_sizes() == nullptr || t->dyn_sizes()->size() == 0) continue;
    if (t->storage() != fb::TensorStorage::Planned && t->storage() != fb::TensorStorage::None) {
      return invalid_program("method '%s' value %u: a tensor with dynamic sizes must be planned", m, vi);
    }
  }
  for (uint32_t si = 0; si < num_symbols; ++si) {
    bool found = false;
    for (uint32_t i = 0; i < count(method.inputs()) && !found; ++i) {
      const auto* dyn = tensor_of(method, method.inputs()->Get(i))->dyn_sizes();
      for (uint32_t d = 0; dyn != nullptr && d < dyn->size() && !found; ++d) {
        found = dyn->Get(d) >= 0 && size_expr_is_symbol(method, dyn->Get(d)) == static_cast<int64_t>(si);
      }
    }
    if (!found) {
      return invalid_program("method '%s' symbol %u (%s) is not the size of any input dim", m, si,
                     method.symbols()->Get(si)->name()->c_str());
    }
  }
  return Error::Ok;
}


// Method memory for the arrays of Shapes, with one log line when it runs out.
struct Arrays {
  MemoryAllocator& allocator;
  const char* method;
  template <typename T>
  T* alloc(size_t n) {
    const size_t count = n == 0 ? 1 : n;
    T* p = allocator.allocate_array<T>(count);
    if (p == nullptr) {
      const size_t bytes = count > SIZE_MAX / sizeof(T) ? SIZE_MAX : count * sizeof(T);
      TERN_LOG_ERROR("method '%s': the method allocator is out of memory for %zu bytes of its dynamic shapes "
                     "(%zu of %zu bytes used)", method, bytes, allocator.used(), allocator.capacity());
    }
    return p;
  }
};

// Finds what depends on the symbols, starts every symbol at its upper bound
// (the shapes kernels are prepared for at load) and sets the sizes there.
Error init(const fb::Method& fm, MemoryAllocator& allocator, EValue* values, Method::Shapes** out) {
  const uint32_t ns = fm.symbols() ? fm.symbols()->size() : 0;
  const uint32_t ne = fm.size_exprs() ? fm.size_exprs()->size() : 0;
  Arrays mem{allocator, fm.name()->c_str()};
  Method::Shapes* shapes = mem.alloc<Method::Shapes>(1);
  if (!shapes) return Error::OutOfMemory;
  Method::Shapes& s = *new (shapes) Method::Shapes();
  *out = shapes;
  s.num_symbols = ns;
  s.num_exprs = ne;
  const uint32_t nv = fm.values()->size(), ni = fm.inputs() ? fm.inputs()->size() : 0;
  const uint32_t nins = fm.instructions()->size();
  for (uint32_t vi = 0; vi < nv; ++vi) {
    if (!value_is_dynamic(fm, vi)) continue;
    switch (fm.values()->Get(vi)->value_type()) {
      case fb::Value::Tensor: ++s.num_tensors; break;
      case fb::Value::Int: ++s.num_ints; break;
      case fb::Value::IntList: ++s.num_lists; break;
      default: break;
    }
  }
  for (uint32_t ii = 0; ii < nins; ++ii) s.num_instrs += instruction_is_dynamic(fm, ii);
  int64_t* bounds = mem.alloc<int64_t>(2 * ns);
  s.symbols = mem.alloc<int64_t>(ns);
  s.symbol_input = mem.alloc<uint32_t>(ns);
  s.symbol_dim = mem.alloc<uint8_t>(ns);
  s.exprs = mem.alloc<int64_t>(ne);
  s.tensors = mem.alloc<uint32_t>(s.num_tensors);
  s.capacity = mem.alloc<int64_t>(s.num_tensors);
  s.tensor_input = mem.alloc<int32_t>(s.num_tensors);
  s.ints = mem.alloc<uint32_t>(s.num_ints);
  s.lists = mem.alloc<uint32_t>(s.num_lists);
  s.list_items = mem.alloc<int64_t*>(s.num_lists);
  s.instrs = mem.alloc<uint32_t>(s.num_instrs);
  s.blocks = mem.alloc<PrepareContext::Block>(size_t(s.num_instrs) * PrepareContext::kMaxBlocks);
  s.num_blocks = mem.alloc<uint8_t>(s.num_instrs);
  if (!bounds || !s.symbols || !s.symbol_input || !s.symbol_dim || !s.exprs || !s.tensors || !s.capacity ||
      !s.tensor_input || !s.ints || !s.lists || !s.list_items || !s.instrs || !s.blocks || !s.num_blocks) {
    return Error::OutOfMemory;
  }
  for (uint32_t si = 0; si < ns; ++si) {
    bounds[si] = fm.symbols()->Get(si)->min();
    bounds[ns + si] = s.symbols[si] = fm.symbols()->Get(si)->max();
    for (uint32_t i = ni; i-- > 0;) {  // the first input dim that is exactly this symbol (verified: one is)
      const auto* dyn = fm.values()->Get(fm.inputs()->Get(i))->value_as_Tensor()->dyn_sizes();
      for (uint32_t d = dyn ? dyn->size() : 0; d-- > 0;) {
        if (dyn->Get(d) >= 0 && size_expr_is_symbol(fm, dyn->Get(d)) == static_cast<int64_t>(si)) {
          s.symbol_input[si] = i;
          s.symbol_dim[si] = static_cast<uint8_t>(d);
        }
      }
    }
  }
  s.symbol_min = bounds;
  s.symbol_max = bounds + ns;
  uint32_t nt = 0, nn = 0, nl = 0;
  for (uint32_t vi = 0; vi < nv; ++vi) {
    if (!value_is_dynamic(fm, vi)) continue;
    const fb::EValue* v = fm.values()->Get(vi);
    if (v->value_type() == fb::Value::Tensor) {
      Tensor planned;
      tensor_shape_from_fb(*v->value_as_Tensor(), &planned);
      s.capacity[nt] = planned.numel;
      s.tensor_input[nt] = -1;
      for (uint32_t i = 0; i < ni; ++i) {
        if (fm.inputs()->Get(i) == vi) s.tensor_input[nt] = static_cast<int32_t>(i);
      }
      s.tensors[nt++] = vi;
    } else if (v->value_type() == fb::Value::Int) {
      s.ints[nn++] = vi;
    } else if (v->value_type() == fb::Value::IntList) {
      const auto* items = v->value_as_IntList()->items();
      int64_t* copy = mem.alloc<int64_t>(items->size());
      if (!copy) return Error::OutOfMemory;
      for (uint32_t j = 0; j < items->size(); ++j) copy[j] = items->Get(j);
      values[vi].ints = Span<const int64_t>(copy, items->size());
      s.list_items[nl] = copy;
      s.lists[nl++] = vi;
    }
  }
  for (uint32_t ii = 0, k = 0; ii < nins; ++ii) {
    if (instruction_is_dynamic(fm, ii)) {
      s.num_blocks[k] = 0;
      s.instrs[k++] = ii;
    }
  }
  return apply_shapes(fm, s, values, /*assign_inputs=*/true);
}

const DynamicShapes kDynamicShapes{init, value_is_dynamic, Method::Shapes::resize_input, Method::Shapes::update};

}  // namespace

void enable_dynamic_shapes() {
  dynamic_shapes = &kDynamicShapes;
  verify_dynamic_shapes = verify;
}

}  // namespace tern
