#include "runtime/executor/method.h"

#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/sizes_text.h"
#include "runtime/executor/arena_poison.h"
#include "runtime/executor/method_internal.h"
#include "schema/tern_generated.h"

namespace tern {

const DynamicShapes* dynamic_shapes = nullptr;

bool Method::input_is_dynamic(size_t i) const {
  return shapes_ != nullptr && i < num_inputs_ && dynamic_shapes->value_is_dynamic(*fb_, inputs_[i]);
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
  if (input_is_dynamic(i)) {
    TERN_CHECK_OK(dynamic_shapes->resize_input(*this, i, src));
  } else if (i < num_inputs_ && !tensor_same_shape(src, values_[inputs_[i]].tensor)) {
    const Tensor& t = values_[inputs_[i]].tensor;
    char want[96], got[96];
    TERN_LOG_ERROR("method '%s': input %zu must be %s%s, got %s%s", name_, i, scalar_type_name(t.dtype),
                   sizes_text(t.sizes, t.dim, want, sizeof(want)), scalar_type_name(src.dtype),
                   sizes_text(src.sizes, src.dim, got, sizeof(got)));
    return Error::InvalidArgument;
  }
  return set_input(i, src.data, src.nbytes());
}

Error Method::execute_instruction(size_t i) {
  if (i >= num_instructions_) {
    TERN_LOG_ERROR("method '%s': instruction %zu does not exist (%zu instructions)", name_, i, num_instructions_);
    return Error::InvalidArgument;
  }
  clear_last_error();
  if (shapes_ != nullptr && shapes_->dirty) TERN_CHECK_OK(dynamic_shapes->update(*this));
  return run_instruction(i);
}

Error Method::run_instruction(size_t i) {
  Instr& in = instrs_[i];
  switch (in.kind) {
    case Instr::Kind::Kernel: {
      RunContext ctx(in.state, scratch_, scratch_bytes_, threads_, scratch_stride_, pool_);
      Error e = in.run(ctx, in.args);
      if (e != Error::Ok) {  // with the kernel's own reason (execute() cleared the last one)
        const char* why = last_error_message();
        TERN_LOG_ERROR("method '%s' instruction %zu (%s, node %s) failed: %s%s%s", name_, i, instruction_op(i),
                       instruction_node(i), error_name(e), why[0] ? ": " : "", why);
      }
      return e;
    }
    case Instr::Kind::BackendCall: {
      const Delegate& d = delegates_[in.a];
      RunContext ctx(nullptr, scratch_, scratch_bytes_, threads_, scratch_stride_, pool_);
      if (hook_ != nullptr) ctx.set_steps(steps_);
      Error e = d.backend->execute(ctx, d.handle, d.args);
      if (e != Error::Ok) {
        const char* why = last_error_message();
        TERN_LOG_ERROR("method '%s' instruction %zu (backend %s, delegate %u) failed: %s%s%s", name_, i,
                       in.op_name, in.a, error_name(e), why[0] ? ": " : "", why);
      }
      return e;
    }
    case Instr::Kind::Move: {
      // Two tensors of one shape (bind_move; method_shapes.cpp for dynamic ones).
      // memmove: the file may place the two tensors in overlapping planned ranges.
      const Tensor& from = values_[in.a].tensor;
      if (from.nbytes() != 0) memmove(values_[in.b].tensor.data, from.data, from.nbytes());
      return Error::Ok;
    }
    default:
      return Error::Ok;
  }
}

size_t Method::num_state() const { return fb_->state() ? fb_->state()->size() : 0; }

const char* Method::state_name(size_t i) const { return fb_->state()->Get(static_cast<uint32_t>(i))->name()->c_str(); }

const Tensor& Method::state(size_t i) const {
  return values_[fb_->state()->Get(static_cast<uint32_t>(i))->value()].tensor;
}

void Method::reset_state() {
  for (size_t i = 0; i < num_state(); ++i) {
    const fb::StateTensor* s = fb_->state()->Get(static_cast<uint32_t>(i));
    const Tensor& init = values_[s->initial()].tensor;  // verified: same dtype and sizes
    if (init.nbytes() != 0) memcpy(values_[s->value()].tensor.data, init.data, init.nbytes());
  }
}

Error Method::execute() {
  clear_last_error();  // a kernel's reason for failing, if one fails, is then this call's
  if (shapes_ != nullptr && shapes_->dirty) TERN_CHECK_OK(dynamic_shapes->update(*this));
  return hook_ ? run_instructions<true>() : run_instructions<false>();
}

template <bool kTraced>
Error Method::run_instructions() {
  size_t pc = 0;
  uint64_t looped = 0;  // instructions run again by jumping back
  while (pc < num_instructions_) {
    const Instr& in = instrs_[pc];
    if (in.kind == Instr::Kind::JumpFalse) {
      const EValue& c = values_[in.a];
      bool cond = c.tag == Tag::Bool ? c.b : *static_cast<const uint8_t*>(c.tensor.data) != 0;
      if (!cond && in.b <= pc) {
        looped += pc - in.b + 1;
        if (max_loop_instructions_ != 0 && looped > max_loop_instructions_) {
          TERN_LOG_ERROR("method '%s': loops ran more than %llu instructions (instruction %zu jumps back to "
                         "%u); MethodOptions::max_loop_instructions bounds them", name_,
                         (unsigned long long)max_loop_instructions_, pc, in.b);
          return Error::ExecutionFailed;
        }
      }
      pc = cond ? pc + 1 : in.b;
      continue;
    }
    if (kTraced) hook_(hook_user_, pc, true);
    Error e = run_instruction(pc);
    if (kTraced) hook_(hook_user_, pc, false);
    TERN_CHECK_OK(e);
    ++pc;
  }
  return Error::Ok;
}

const char* Method::instruction_op(size_t i) const { return instrs_[i].op_name; }

InstructionKind Method::instruction_kind(size_t i) const { return instrs_[i].kind; }

Method::Method(Method&& other) noexcept { *this = static_cast<Method&&>(other); }

Method& Method::operator=(Method&& other) noexcept {
  if (this == &other) return *this;
  destroy_delegates();
  unpoison_arenas();
  fb_ = other.fb_;
  name_ = other.name_;
  values_ = other.values_;
  num_values_ = other.num_values_;
  inputs_ = other.inputs_;
  outputs_ = other.outputs_;
  num_inputs_ = other.num_inputs_;
  num_outputs_ = other.num_outputs_;
  instrs_ = other.instrs_;
  num_instructions_ = other.num_instructions_;
  scratch_ = other.scratch_;
  scratch_bytes_ = other.scratch_bytes_;
  scratch_stride_ = other.scratch_stride_;
  persistent_bytes_ = other.persistent_bytes_;
  metadata_bytes_ = other.metadata_bytes_;
  threads_ = other.threads_;
  max_loop_instructions_ = other.max_loop_instructions_;
  pool_ = other.pool_;
  delegates_ = other.delegates_;
  num_delegates_ = other.num_delegates_;
  hook_ = other.hook_;
  hook_user_ = other.hook_user_;
  steps_ = other.steps_;
  shapes_ = other.shapes_;
  poisoned_ = other.poisoned_;
  num_poisoned_ = other.num_poisoned_;
  other.num_delegates_ = 0;  // the delegates are this method's now
  other.num_poisoned_ = 0;   // and so are the poisoned arenas
  return *this;
}

Method::~Method() {
  destroy_delegates();
  unpoison_arenas();
}

void Method::unpoison_arenas() {
  for (size_t i = 0; i < num_poisoned_; ++i) unpoison_bytes(poisoned_[i].data(), poisoned_[i].size());
  num_poisoned_ = 0;
}

void Method::destroy_delegates() {
  for (size_t i = num_delegates_; i > 0; --i) delegates_[i - 1].backend->destroy(delegates_[i - 1].handle);
  num_delegates_ = 0;
}

const char* Method::delegate_backend(size_t i) const {
  return i < num_delegates_ ? delegates_[i].backend->name() : "";
}

const char* Method::delegate_description(size_t i) const {
  return i < num_delegates_ ? delegates_[i].backend->describe(delegates_[i].handle) : "";
}

size_t Method::delegate_details(size_t i, char* out, size_t size) const {
  if (i < num_delegates_) return delegates_[i].backend->describe_details(delegates_[i].handle, out, size);
  if (size > 0) out[0] = '\0';
  return 0;
}

size_t Method::instruction_outputs(size_t i, const Tensor** out, size_t capacity) const {
  if (i >= num_instructions_) return 0;
  const Instr& in = instrs_[i];
  size_t n = 0;
  auto add = [&](const EValue& v) {
    if (v.tag != Tag::Tensor) return;
    if (n < capacity) out[n] = &v.tensor;
    ++n;
  };
  if (in.kind == Instr::Kind::Kernel) {
    const auto* args = fb_->instructions()->Get(static_cast<uint32_t>(i))->kind_as_KernelCall()->args();
    const uint32_t nargs = args ? args->size() : 0;
    for (uint32_t j = nargs - in.kernel->num_outputs; j < nargs; ++j) add(*in.args[j]);  // outs last (check_outs)
  } else if (in.kind == Instr::Kind::Move) {
    add(values_[in.b]);
  }
  return n;
}

const char* Method::instruction_node(size_t i) const {
  if (fb_->debug() && fb_->debug()->size() > i && fb_->debug()->Get(i)->node()) {
    return fb_->debug()->Get(i)->node()->c_str();
  }
  return "";
}

}  // namespace tern
