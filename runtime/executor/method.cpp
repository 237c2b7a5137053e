#include "runtime/executor/method.h"

#include <cstring>

#include "runtime/core/log.h"
#include "runtime/format/verify.h"
#include "runtime/kernel/registry.h"
#include "schema/tern_generated.h"

namespace tern {

struct Method::Instr {
  enum class Kind : uint8_t { Kernel, Move, JumpFalse, Free };
  Kind kind;
  uint32_t a = 0;  // Move: from; JumpFalse: condition value
  uint32_t b = 0;  // Move: to;   JumpFalse: target instruction
  RunFn run = nullptr;
  EValue** args = nullptr;  // Kernel: arguments then outs
  const char* op_name = "";  // "aten::add.Tensor"
  alignas(16) unsigned char state[PrepareContext::kStateBytes];
};

namespace {

// Everything Method::load builds, in one place while it builds it.
struct Loader {
  const Program& program;
  const fb::Method& fm;
  MemoryManager& memory;
  EValue* values = nullptr;

  template <typename T>
  T* alloc(size_t n, const char* what) {
    T* p = memory.method_allocator->allocate_array<T>(n == 0 ? 1 : n);
    if (p == nullptr) {
      TERN_LOG_ERROR("method '%s': the method allocator is out of memory for %zu %s "
                     "(%zu of %zu bytes used)", fm.name()->c_str(), n, what,
                     memory.method_allocator->used(), memory.method_allocator->capacity());
    }
    return p;
  }

  const fb::Tensor* fb_tensor(uint32_t vi) const { return fm.values()->Get(vi)->value_as_Tensor(); }

  Error check_arenas() {
    uint32_t n = fm.arena_sizes() ? fm.arena_sizes()->size() : 0;
    if (memory.planned.size() < n) {
      TERN_LOG_ERROR("method '%s' plans %u arenas, the memory manager gives %zu",
                     fm.name()->c_str(), n, memory.planned.size());
      return Error::MemoryTooSmall;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const Span<uint8_t>& a = memory.planned[i];
      if (a.size() < fm.arena_sizes()->Get(i) || reinterpret_cast<uintptr_t>(a.data()) % 64 != 0) {
        TERN_LOG_ERROR("method '%s' arena %u needs %llu bytes, 64-byte aligned; given %zu at %p",
                       fm.name()->c_str(), i, (unsigned long long)fm.arena_sizes()->Get(i),
                       a.size(), static_cast<void*>(a.data()));
        return Error::MemoryTooSmall;
      }
    }
    return Error::Ok;
  }

  void init_tensor(const fb::Tensor& t, Tensor* out) {
    tensor_shape_from_fb(t, out);
    switch (t.storage()) {
      case fb::TensorStorage::Constant:
        // Constants are read-only: kernels never write their inputs, and the
        // executor checks at load that every out tensor is planned memory.
        out->data = const_cast<uint8_t*>(program.segment_data(t.segment())) + t.offset();
        break;
      case fb::TensorStorage::Planned:
        out->data = memory.planned[t.arena()].data() + t.offset();
        break;
      default:
        out->data = nullptr;
    }
  }

  // items: value indices of tensors (verified), -1 for None in optional lists.
  template <typename Index>
  Error init_tensor_list(const flatbuffers::Vector<Index>* items, EValue* v) {
    Tensor** ts = alloc<Tensor*>(items->size(), "tensor list items");
    if (!ts) return Error::OutOfMemory;
    for (uint32_t j = 0; j < items->size(); ++j) {
      int64_t idx = static_cast<int64_t>(items->Get(j));
      ts[j] = idx < 0 ? nullptr : &values[idx].tensor;
    }
    v->tensors = Span<Tensor* const>(ts, items->size());
    return Error::Ok;
  }

  Error init_values() {
    uint32_t n = fm.values()->size();
    values = alloc<EValue>(n, "values");
    if (!values) return Error::OutOfMemory;
    for (uint32_t i = 0; i < n; ++i) new (&values[i]) EValue();
    for (uint32_t i = 0; i < n; ++i) TERN_CHECK_OK(init_value(i));
    return Error::Ok;
  }

  Error init_value(uint32_t i) {
    const fb::EValue* fv = fm.values()->Get(i);
    EValue* v = &values[i];
    switch (fv->value_type()) {
      case fb::Value::NONE: v->tag = Tag::None; break;
      case fb::Value::Tensor:
        v->tag = Tag::Tensor;
        v->tensor = Tensor();
        init_tensor(*fv->value_as_Tensor(), &v->tensor);
        break;
      case fb::Value::Int: v->tag = Tag::Int; v->i = fv->value_as_Int()->value(); break;
      case fb::Value::Double: v->tag = Tag::Double; v->d = fv->value_as_Double()->value(); break;
      case fb::Value::Bool: v->tag = Tag::Bool; v->b = fv->value_as_Bool()->value(); break;
      case fb::Value::String: v->tag = Tag::String; v->str = fv->value_as_String()->value()->c_str(); break;
      case fb::Value::IntList: {
        const auto* items = fv->value_as_IntList()->items();  // 8-aligned in an 8-aligned buffer
        v->tag = Tag::IntList;
        v->ints = Span<const int64_t>(reinterpret_cast<const int64_t*>(items->data()), items->size());
        break;
      }
      case fb::Value::DoubleList: {
        const auto* items = fv->value_as_DoubleList()->items();
        v->tag = Tag::DoubleList;
        v->doubles = Span<const double>(items->data(), items->size());
        break;
      }
      case fb::Value::BoolList: {
        const auto* items = fv->value_as_BoolList()->items();
        v->tag = Tag::BoolList;
        v->bools = Span<const uint8_t>(reinterpret_cast<const uint8_t*>(items->data()), items->size());
        break;
      }
      case fb::Value::TensorList:
        v->tag = Tag::TensorList;
        return init_tensor_list(fv->value_as_TensorList()->items(), v);
      case fb::Value::OptionalTensorList:
        v->tag = Tag::OptionalTensorList;
        return init_tensor_list(fv->value_as_OptionalTensorList()->items(), v);
    }
    return Error::Ok;
  }

  // A tensor value a kernel or set_input may write: planned, or empty.
  bool writable(uint32_t vi) const {
    const fb::Tensor* t = fb_tensor(vi);
    return t != nullptr && (t->storage() == fb::TensorStorage::Planned || values[vi].tensor.numel == 0);
  }

  // An out argument: a writable tensor, or a list of them (ops returning Tensor[]).
  bool writable_out(uint32_t vi) const {
    const fb::EValue* v = fm.values()->Get(vi);
    if (v->value_type() != fb::Value::TensorList) return writable(vi);
    for (uint32_t item : *v->value_as_TensorList()->items()) {
      if (!writable(item)) return false;
    }
    return true;
  }

  Error bind_kernel(uint32_t ii, const fb::KernelCall& call, const OpKernel* const* kernels,
                    Method::Instr* instr, size_t* scratch) {
    const OpKernel* k = kernels[call.op()];
    uint32_t nargs = call.args() ? call.args()->size() : 0;
    instr->kind = Method::Instr::Kind::Kernel;
    instr->op_name = k->name;
    instr->args = alloc<EValue*>(nargs, "kernel arguments");
    if (!instr->args) return Error::OutOfMemory;
    for (uint32_t j = 0; j < nargs; ++j) instr->args[j] = &values[call.args()->Get(j)];
    if (nargs < k->num_outputs) {
      TERN_LOG_ERROR("instruction %u (%s): %u arguments, fewer than its %u outs", ii, k->name, nargs, k->num_outputs);
      return Error::InvalidProgram;
    }
    for (uint32_t j = nargs - k->num_outputs; j < nargs; ++j) {
      if (!writable_out(call.args()->Get(j))) {
        TERN_LOG_ERROR("instruction %u (%s): out argument %u (value %u) is not planned tensor memory",
                       ii, k->name, j, call.args()->Get(j));
        return Error::InvalidProgram;
      }
    }
    PrepareContext ctx(k->name, ii);
    Error e = k->prepare(ctx, Span<EValue* const>(instr->args, nargs));
    if (e != Error::Ok) {
      const char* node = fm.debug() && fm.debug()->size() > ii && fm.debug()->Get(ii)->node()
                             ? fm.debug()->Get(ii)->node()->c_str() : "?";
      TERN_LOG_ERROR("instruction %u (%s, node %s): the kernel rejected its arguments (%s)", ii,
                     k->name, node, error_name(e));
      return e;
    }
    if (ctx.run() == nullptr) TERN_ABORT("kernel %s: prepare did not set a run function", k->name);
    instr->run = ctx.run();
    memcpy(instr->state, ctx.state(), sizeof(instr->state));
    if (ctx.scratch() > *scratch) *scratch = ctx.scratch();
    return Error::Ok;
  }

  Error bind_move(uint32_t ii, const fb::Move& mv, Method::Instr* instr) {
    const EValue& from = values[mv.from()];
    const EValue& to = values[mv.to()];
    bool ok = from.tag == to.tag && from.tag != Tag::Tensor;
    if (from.tag == Tag::Tensor && to.tag == Tag::Tensor) {
      ok = tensor_same_shape(from.tensor, to.tensor) && writable(mv.to());
    }
    if (!ok) {
      TERN_LOG_ERROR("instruction %u: move from value %u (%s) to value %u (%s): kinds, shapes or "
                     "storage do not match", ii, mv.from(), tag_name(from.tag), mv.to(), tag_name(to.tag));
      return Error::InvalidProgram;
    }
    instr->kind = Method::Instr::Kind::Move;
    instr->a = mv.from();
    instr->b = mv.to();
    return Error::Ok;
  }

  Error bind_jump(uint32_t ii, const fb::JumpFalse& j, Method::Instr* instr) {
    const EValue& c = values[j.cond()];
    bool ok = c.tag == Tag::Bool ||
              (c.tag == Tag::Tensor && c.tensor.dtype == ScalarType::Bool && c.tensor.numel == 1);
    if (!ok) {
      TERN_LOG_ERROR("instruction %u: jump condition value %u is not a Bool", ii, j.cond());
      return Error::InvalidProgram;
    }
    instr->kind = Method::Instr::Kind::JumpFalse;
    instr->a = j.cond();
    instr->b = j.target();
    return Error::Ok;
  }

  // Resolves every operator to a kernel once; logs each one that is missing.
  Error resolve_operators(const OpKernel*** out) {
    uint32_t n = fm.operators() ? fm.operators()->size() : 0;
    const OpKernel** kernels = alloc<const OpKernel*>(n, "operators");
    if (!kernels) return Error::OutOfMemory;
    Error result = Error::Ok;
    for (uint32_t i = 0; i < n; ++i) {
      const fb::Operator* op = fm.operators()->Get(i);
      const char* overload = op->overload() ? op->overload()->c_str() : "";
      kernels[i] = find_kernel(op->name()->c_str(), overload);
      if (kernels[i] == nullptr) {
        TERN_LOG_ERROR("method '%s': no kernel registered for operator %s%s%s", fm.name()->c_str(),
                       op->name()->c_str(), overload[0] ? "." : "", overload);
        result = Error::OperatorMissing;
      }
    }
    *out = kernels;
    return result;
  }
};

}  // namespace

Result<Method> Method::load(const Program& program, const char* name, MemoryManager& memory) {
  const fb::Method* fm = program.method(name);
  if (fm == nullptr) {
    TERN_LOG_ERROR("the program has no method '%s'", name);
    return Error::NotFound;
  }
  if (memory.method_allocator == nullptr) {
    TERN_LOG_ERROR("Method::load('%s'): the memory manager has no method allocator", name);
    return Error::InvalidArgument;
  }
  size_t used_before = memory.method_allocator->used();
  Loader ld{program, *fm, memory};
  TERN_CHECK_OK(ld.check_arenas());
  TERN_CHECK_OK(ld.init_values());
  for (uint32_t i = 0; i < (fm->inputs() ? fm->inputs()->size() : 0); ++i) {
    if (!ld.writable(fm->inputs()->Get(i))) {
      TERN_LOG_ERROR("method '%s' input %u is not a planned tensor", name, i);
      return Error::InvalidProgram;
    }
  }
  const OpKernel** kernels = nullptr;
  TERN_CHECK_OK(ld.resolve_operators(&kernels));

  Method m;
  m.fb_ = fm;
  m.name_ = fm->name()->c_str();
  m.values_ = ld.values;
  m.num_values_ = fm->values()->size();
  m.num_inputs_ = fm->inputs() ? fm->inputs()->size() : 0;
  m.num_outputs_ = fm->outputs() ? fm->outputs()->size() : 0;
  m.inputs_ = fm->inputs() ? fm->inputs()->data() : nullptr;
  m.outputs_ = fm->outputs() ? fm->outputs()->data() : nullptr;
  m.num_instructions_ = fm->instructions()->size();
  m.instrs_ = ld.alloc<Instr>(m.num_instructions_, "instructions");
  if (!m.instrs_) return Error::OutOfMemory;
  size_t scratch = 0;
  for (uint32_t i = 0; i < m.num_instructions_; ++i) {
    const fb::Instruction* ins = fm->instructions()->Get(i);
    Instr* instr = new (&m.instrs_[i]) Instr();
    switch (ins->kind_type()) {
      case fb::InstructionKind::KernelCall:
        TERN_CHECK_OK(ld.bind_kernel(i, *ins->kind_as_KernelCall(), kernels, instr, &scratch));
        break;
      case fb::InstructionKind::Move: TERN_CHECK_OK(ld.bind_move(i, *ins->kind_as_Move(), instr)); break;
      case fb::InstructionKind::JumpFalse: TERN_CHECK_OK(ld.bind_jump(i, *ins->kind_as_JumpFalse(), instr)); break;
      default: instr->kind = Instr::Kind::Free; break;
    }
  }
  if (scratch > 0) {
    m.scratch_ = memory.method_allocator->allocate(scratch, 64);
    if (!m.scratch_) {
      TERN_LOG_ERROR("method '%s': the method allocator is out of memory for %zu bytes of kernel "
                     "scratch (%zu of %zu bytes used)", name, scratch,
                     memory.method_allocator->used(), memory.method_allocator->capacity());
      return Error::OutOfMemory;
    }
  }
  m.scratch_bytes_ = scratch;
  m.metadata_bytes_ = memory.method_allocator->used() - used_before;
  return m;
}

Error Method::set_input(size_t i, const void* data, size_t nbytes) {
  if (i >= num_inputs_) {
    TERN_LOG_ERROR("method '%s': input %zu does not exist (%zu inputs)", name_, i, num_inputs_);
    return Error::InvalidArgument;
  }
  Tensor& t = values_[inputs_[i]].tensor;
  if (nbytes != t.nbytes()) {
    TERN_LOG_ERROR("method '%s': input %zu takes %zu bytes (%s, %lld elements), got %zu", name_, i,
                   t.nbytes(), scalar_type_name(t.dtype), (long long)t.numel, nbytes);
    return Error::InvalidArgument;
  }
  if (nbytes) memcpy(t.data, data, nbytes);
  return Error::Ok;
}

Error Method::set_input(size_t i, const Tensor& src) {
  if (i < num_inputs_ && !tensor_same_shape(src, values_[inputs_[i]].tensor)) {
    const Tensor& t = values_[inputs_[i]].tensor;
    TERN_LOG_ERROR("method '%s': input %zu must be %s with %d dims, got %s with %d dims", name_, i,
                   scalar_type_name(t.dtype), t.dim, scalar_type_name(src.dtype), src.dim);
    return Error::InvalidArgument;
  }
  return set_input(i, src.data, src.nbytes());
}

Error Method::execute_instruction(size_t i) {
  Instr& in = instrs_[i];
  switch (in.kind) {
    case Instr::Kind::Kernel: {
      RunContext ctx(scratch_, scratch_bytes_, in.state);
      Error e = in.run(ctx, in.args);
      if (e != Error::Ok) {
        TERN_LOG_ERROR("method '%s' instruction %zu (%s, node %s) failed: %s", name_, i,
                       instruction_op(i), instruction_node(i), error_name(e));
      }
      return e;
    }
    case Instr::Kind::Move: {
      EValue& from = values_[in.a];
      EValue& to = values_[in.b];
      if (from.tag == Tag::Tensor) {
        // memmove: the file may place the two tensors in overlapping planned ranges.
        if (from.tensor.nbytes() != 0) memmove(to.tensor.data, from.tensor.data, from.tensor.nbytes());
      } else {
        to = from;
      }
      return Error::Ok;
    }
    default:
      return Error::Ok;
  }
}

Error Method::execute() {
  size_t pc = 0;
  while (pc < num_instructions_) {
    const Instr& in = instrs_[pc];
    if (in.kind == Instr::Kind::JumpFalse) {
      const EValue& c = values_[in.a];
      bool cond = c.tag == Tag::Bool ? c.b : *static_cast<const uint8_t*>(c.tensor.data) != 0;
      pc = cond ? pc + 1 : in.b;
      continue;
    }
    TERN_CHECK_OK(execute_instruction(pc));
    ++pc;
  }
  return Error::Ok;
}

const char* Method::instruction_op(size_t i) const { return instrs_[i].op_name; }

const char* Method::instruction_node(size_t i) const {
  if (fb_->debug() && fb_->debug()->size() > i && fb_->debug()->Get(i)->node()) {
    return fb_->debug()->Get(i)->node()->c_str();
  }
  return "";
}

}  // namespace tern
