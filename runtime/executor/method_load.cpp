// Method::load: binds a verified method to kernels, backends and memory.
// One short Loader step per concern: arenas, values, operators, delegates,
// instructions, scratch.
#include <cstdio>
#include <cstdint>
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/overflow.h"
#include "runtime/core/thread_pool.h"
#include "runtime/executor/arena_poison.h"
#include "runtime/executor/method_internal.h"
#include "runtime/format/verify.h"
#include "runtime/kernel/registry.h"
#include "schema/tern_generated.h"

namespace tern {

namespace {

// Everything Method::load builds, in one place while it builds it.
struct Loader {
  const Program& program;
  const fb::Method& fm;
  MemoryManager& memory;
  int threads;
  EValue* values = nullptr;
  const OpKernel** candidates = nullptr;  // per operator: kernels_of()
  uint8_t* num_candidates = nullptr;
  size_t scratch = 0;  // the largest request of any instruction (per thread)
  size_t persistent = 0;
  Method::Shapes* shapes = nullptr;  // dynamic shapes (format 1.3), or nullptr
  int dyn_slot = -1;  // while binding a dynamic instruction: its index in shapes->instrs

  template <typename T>
  T* alloc(size_t n, const char* what) {
    const size_t count = n == 0 ? 1 : n;
    T* p = memory.method_allocator->allocate_array<T>(count);
    if (p == nullptr) {
      // the bytes asked for (allocate_array refuses a count whose bytes overflow)
      const size_t bytes = count > SIZE_MAX / sizeof(T) ? SIZE_MAX : count * sizeof(T);
      TERN_LOG_ERROR("method '%s': the method allocator is out of memory for %zu %s (%zu bytes; "
                     "%zu of %zu bytes used)", fm.name()->c_str(), n, what, bytes,
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
      case fb::TensorStorage::State:
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

  // Dynamic shapes (format 1.3), through tern::enable_dynamic_shapes()'s
  // module (verify_method refused the file if it is not linked in).
  Error init_shapes() {
    const bool dynamic = (fm.symbols() && fm.symbols()->size()) || (fm.size_exprs() && fm.size_exprs()->size());
    if (!dynamic) return Error::Ok;
    if (dynamic_shapes == nullptr) return Error::NotSupported;  // verified: not reached
    return dynamic_shapes->init(fm, *memory.method_allocator, values, &shapes);
  }

  // A tensor value a kernel or set_input may write: planned, or empty.
  bool writable(uint32_t vi) const {
    const fb::Tensor* t = fb_tensor(vi);
    return t != nullptr && (t->storage() == fb::TensorStorage::Planned || t->storage() == fb::TensorStorage::State ||
                            values[vi].tensor.numel == 0);
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

  const char* node_name(uint32_t ii) const {
    return fm.debug() && fm.debug()->size() > ii && fm.debug()->Get(ii)->node()
               ? fm.debug()->Get(ii)->node()->c_str() : "?";
  }

  Error bind_kernel(uint32_t ii, const fb::KernelCall& call, Span<const OpKernel* const> kernels,
                    Method::Instr* instr) {
    uint32_t nargs = call.args() ? call.args()->size() : 0;
    instr->kind = Method::Instr::Kind::Kernel;
    instr->args = alloc<EValue*>(nargs, "kernel arguments");
    if (!instr->args) return Error::OutOfMemory;
    for (uint32_t j = 0; j < nargs; ++j) instr->args[j] = &values[call.args()->Get(j)];
    Span<EValue* const> args(instr->args, nargs);
    ScalarType dtype = ScalarType::Float32;
    const bool has_dtype = instruction_dtype(args, &dtype);
    char reasons[480] = "";
    for (const OpKernel* k : kernels) {
      instr->op_name = k->name;
      if (!has_dtype || k->dtypes == kAnyDtype || (k->dtypes & dtype_bit(dtype))) {
        TERN_CHECK_OK(check_outs(ii, call, *k));
        PrepareContext ctx(k->name, ii, memory.method_allocator, threads);
        Error e = k->prepare(ctx, args);
        if (e == Error::Ok) return finish_bind(ctx, *k, instr);
        if (e != Error::OperatorMissing) {
          TERN_LOG_ERROR("instruction %u (%s, node %s): %s", ii, k->name, node_name(ii),
                         ctx.message()[0] ? ctx.message() : error_name(e));
          return e;
        }
        append_reason(reasons, sizeof(reasons), *k, ctx.message());
      } else {
        char why[160];
        dtype_reason(dtype, k->dtypes, why, sizeof(why));
        append_reason(reasons, sizeof(reasons), *k, why);
      }
    }
    TERN_LOG_ERROR("instruction %u (%s, node %s): %s%s", ii, instr->op_name, node_name(ii),
                   kernels.size() > 1 ? "no kernel library takes these arguments: " : "", reasons);
    return Error::OperatorMissing;
  }

  // The instruction's dtype (OpKernel::dtypes): its first tensor argument's.
  static bool instruction_dtype(Span<EValue* const> args, ScalarType* out) {
    for (EValue* v : args) {
      if (v->tag == Tag::Tensor) {
        *out = v->tensor.dtype;
        return true;
      }
      if (v->tag == Tag::TensorList || v->tag == Tag::OptionalTensorList) {
        for (Tensor* t : v->tensors) {
          if (t != nullptr) {
            *out = t->dtype;
            return true;
          }
        }
      }
    }
    return false;
  }

  // "float16 is not supported (it takes float32, float64)".
  static void dtype_reason(ScalarType dtype, uint32_t dtypes, char* buf, size_t size) {
    size_t used = static_cast<size_t>(snprintf(buf, size, "%s is not supported (it takes", scalar_type_name(dtype)));
    const char* sep = " ";
    for (int t = 0; t < kNumScalarTypes && used < size; ++t) {
      if (dtypes & dtype_bit(static_cast<ScalarType>(t))) {
        used += static_cast<size_t>(snprintf(buf + used, size - used, "%s%s", sep, scalar_type_name(static_cast<ScalarType>(t))));
        sep = ", ";
      }
    }
    if (used < size) snprintf(buf + used, size - used, ")");
  }

  // One library's reason, "portable: <why>", added to the list; with one
  // candidate, the reason alone.
  static void append_reason(char* buf, size_t size, const OpKernel& k, const char* why) {
    size_t used = strlen(buf);
    const KernelLibrary* lib = library_of(k);
    snprintf(buf + used, size - used, "%s%s%s%s", used ? "; " : "", lib ? lib->name : "?",
             ": ", why[0] ? why : "rejected");
  }

  Error check_outs(uint32_t ii, const fb::KernelCall& call, const OpKernel& k) const {
    uint32_t nargs = call.args() ? call.args()->size() : 0;
    if (nargs < k.num_outputs) {
      TERN_LOG_ERROR("instruction %u (%s): %u arguments, fewer than its %u outs", ii, k.name, nargs, k.num_outputs);
      return Error::InvalidProgram;
    }
    for (uint32_t j = nargs - k.num_outputs; j < nargs; ++j) {
      if (!writable_out(call.args()->Get(j))) {
        TERN_LOG_ERROR("instruction %u (%s): out argument %u (value %u) is not planned tensor memory",
                       ii, k.name, j, call.args()->Get(j));
        return Error::InvalidProgram;
      }
    }
    return Error::Ok;
  }

  Error finish_bind(const PrepareContext& ctx, const OpKernel& k, Method::Instr* instr) {
    if (ctx.run() == nullptr) TERN_ABORT("kernel %s: prepare did not set a run function", k.name);
    if (dyn_slot >= 0) {  // prepared again when shapes change, with the same persistent blocks
      if (ctx.num_blocks() > PrepareContext::kMaxBlocks) {
        TERN_LOG_ERROR("instruction %u (%s, node %s): its prepare allocates %d blocks; with dynamic shapes a "
                       "kernel may allocate at most %d", ctx.instruction(), k.name, node_name(ctx.instruction()),
                       ctx.num_blocks(), PrepareContext::kMaxBlocks);
        return Error::NotSupported;
      }
      memcpy(shapes->blocks + size_t(dyn_slot) * PrepareContext::kMaxBlocks, ctx.blocks(),
             sizeof(PrepareContext::Block) * static_cast<size_t>(ctx.num_blocks()));
      shapes->num_blocks[dyn_slot] = static_cast<uint8_t>(ctx.num_blocks());
    }
    instr->kernel = &k;
    instr->run = ctx.run();
    memcpy(instr->state, ctx.state_bytes(), sizeof(instr->state));
    if (ctx.scratch() > scratch) scratch = ctx.scratch();
    persistent += ctx.persistent_bytes();
    return Error::Ok;
  }

  // A Move copies a tensor's bytes into another planned tensor of the same
  // dtype and shape. Only tensors move: kernels read their scalar and list
  // arguments at prepare, and a list replaced at execute would run them with
  // lengths they never checked.
  Error bind_move(uint32_t ii, const fb::Move& mv, Method::Instr* instr) {
    const EValue& from = values[mv.from()];
    const EValue& to = values[mv.to()];
    const bool ok = from.tag == Tag::Tensor && to.tag == Tag::Tensor &&
                    tensor_same_shape(from.tensor, to.tensor) && writable(mv.to());
    if (!ok) {
      TERN_LOG_ERROR("method '%s' instruction %u: move from value %u (%s) to value %u (%s): a move takes two "
                     "tensors of one dtype and shape, the second planned memory", fm.name()->c_str(), ii,
                     mv.from(), tag_name(from.tag), mv.to(), tag_name(to.tag));
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
      TERN_LOG_ERROR("method '%s' instruction %u: jump condition value %u (%s) is not a Bool or a 1-element bool tensor",
                     fm.name()->c_str(), ii, j.cond(), tag_name(c.tag));
      return Error::InvalidProgram;
    }
    instr->kind = Method::Instr::Kind::JumpFalse;
    instr->a = j.cond();
    instr->b = j.target();
    return Error::Ok;
  }

  // Initializes every delegate on its backend, in order; m owns each as soon
  // as it is initialized (a later failure destroys it with m).
  Error bind_delegates(Method::Delegate* delegates, size_t* num_initialized) {
    for (uint32_t di = 0; di < (fm.delegates() ? fm.delegates()->size() : 0); ++di) {
      const fb::Delegate& d = *fm.delegates()->Get(di);
      const char* name = d.backend()->c_str();
      const Backend* backend = find_backend(name);
      if (backend == nullptr) {
        TERN_LOG_ERROR("method '%s' delegate %u: backend '%s' is not registered in this runtime "
                       "(%zu backends registered)", fm.name()->c_str(), di, name, registered_backends().size());
        return Error::NotSupported;
      }
      const uint32_t ni = d.inputs() ? d.inputs()->size() : 0, no = d.outputs() ? d.outputs()->size() : 0;
      EValue** args = alloc<EValue*>(ni + no, "delegate arguments");
      if (!args) return Error::OutOfMemory;
      for (uint32_t j = 0; j < ni; ++j) args[j] = &values[d.inputs()->Get(j)];
      for (uint32_t j = 0; j < no; ++j) {
        if (!writable(d.outputs()->Get(j))) {
          TERN_LOG_ERROR("method '%s' delegate %u (%s): output %u (value %u) is not planned tensor memory",
                         fm.name()->c_str(), di, name, j, d.outputs()->Get(j));
          return Error::InvalidProgram;
        }
        args[ni + j] = &values[d.outputs()->Get(j)];
      }
      Span<const uint8_t> payload(program.segment_data(d.payload_segment()),
                                  static_cast<size_t>(program.segment_size(d.payload_segment())));
      PrepareContext ctx(name, di, memory.method_allocator, threads);
      Result<void*> handle = backend->init(ctx, payload, Span<EValue* const>(args, ni), Span<EValue* const>(args + ni, no));
      if (!handle.ok()) {
        TERN_LOG_ERROR("method '%s' delegate %u (backend %s): %s", fm.name()->c_str(), di, name,
                       ctx.message()[0] ? ctx.message() : error_name(handle.error()));
        return handle.error();
      }
      delegates[di] = Method::Delegate{backend, *handle, args};
      *num_initialized = di + 1;
      if (ctx.scratch() > scratch) scratch = ctx.scratch();
      persistent += ctx.persistent_bytes();
    }
    return Error::Ok;
  }

  Error bind_instructions(Method::Instr* instrs, const Method::Delegate* delegates) {
    uint32_t next_dynamic = 0;
    for (uint32_t i = 0; i < fm.instructions()->size(); ++i) {
      const fb::Instruction* ins = fm.instructions()->Get(i);
      Method::Instr* instr = new (&instrs[i]) Method::Instr();
      dyn_slot = -1;
      if (shapes != nullptr && next_dynamic < shapes->num_instrs && shapes->instrs[next_dynamic] == i) {
        dyn_slot = static_cast<int>(next_dynamic++);
      }
      switch (ins->kind_type()) {
        case fb::InstructionKind::KernelCall: {
          const fb::KernelCall& call = *ins->kind_as_KernelCall();
          TERN_CHECK_OK(bind_kernel(i, call, kernels_of(call.op()), instr));
          break;
        }
        case fb::InstructionKind::BackendCall: {
          const uint32_t d = ins->kind_as_BackendCall()->delegate();  // verified in range
          instr->kind = Method::Instr::Kind::BackendCall;
          instr->a = d;
          instr->args = delegates[d].args;
          instr->op_name = delegates[d].backend->name();
          break;
        }
        case fb::InstructionKind::Move: TERN_CHECK_OK(bind_move(i, *ins->kind_as_Move(), instr)); break;
        case fb::InstructionKind::JumpFalse: TERN_CHECK_OK(bind_jump(i, *ins->kind_as_JumpFalse(), instr)); break;
        default: instr->kind = Method::Instr::Kind::Free; break;
      }
    }
    return Error::Ok;
  }

  // AddressSanitizer builds: poisons the bytes of each planned arena that no
  // planned tensor covers (arena_poison.h), the last step of a load, and
  // records the arenas in *arenas for ~Method to unpoison. Other builds: nothing.
  Error poison_arena_gaps(Span<uint8_t>** arenas, size_t* count) {
    if constexpr (!kPoisonArenas) return Error::Ok;
    const uint32_t n = fm.arena_sizes() ? fm.arena_sizes()->size() : 0;
    if (n == 0) return Error::Ok;
    Span<uint8_t>* record = alloc<Span<uint8_t>>(n, "poisoned arenas");
    if (record == nullptr) return Error::OutOfMemory;
    for (uint32_t i = 0; i < n; ++i) {
      record[i] = memory.planned[i];  // all the application gave, its round-up too
      if (record[i].size() != 0) poison_bytes(record[i].data(), record[i].size());
    }
    for (uint32_t vi = 0; vi < fm.values()->size(); ++vi) {
      const fb::Tensor* t = fb_tensor(vi);
      if (t == nullptr || (t->storage() != fb::TensorStorage::Planned && t->storage() != fb::TensorStorage::State)) {
        continue;
      }
      Tensor planned;
      tensor_shape_from_fb(*t, &planned);  // the file's sizes: a dynamic tensor's upper bound
      if (planned.nbytes() != 0) unpoison_bytes(memory.planned[t->arena()].data() + t->offset(), planned.nbytes());
    }
    *arenas = record;
    *count = n;
    return Error::Ok;
  }

  // One block of the largest scratch request per thread, each 64-aligned.
  Error reserve_scratch(void** out, size_t* stride) {
    *out = nullptr;
    *stride = (scratch + 63) & ~size_t(63);
    if (scratch == 0) return Error::Ok;
    uint64_t total;
    if (!checked_mul(*stride, static_cast<uint64_t>(threads), &total) || total > SIZE_MAX) {
      TERN_LOG_ERROR("method '%s': kernel scratch of %d threads x %zu bytes does not fit in memory",
                     fm.name()->c_str(), threads, *stride);
      return Error::OutOfMemory;
    }
    if ((*out = memory.method_allocator->allocate(static_cast<size_t>(total), 64)) == nullptr) {
      TERN_LOG_ERROR("method '%s': the method allocator is out of memory for %llu bytes of kernel scratch "
                     "(%d threads x %zu bytes; %zu of %zu bytes used)", fm.name()->c_str(),
                     (unsigned long long)total, threads, *stride, memory.method_allocator->used(),
                     memory.method_allocator->capacity());
      return Error::OutOfMemory;
    }
    // Written once here so that its pages are resident before the first
    // execute() (an allocator over fresh heap or mmap memory maps a page at
    // its first write, which would otherwise be the first run's).
    memset(*out, 0, static_cast<size_t>(total));
    return Error::Ok;
  }

  // Resolves every operator to its kernels (one per library that has it,
  // most preferred first) once; logs each operator that has none.
  Error resolve_operators() {
    uint32_t n = fm.operators() ? fm.operators()->size() : 0;
    const size_t per_op = kernel_libraries().size();
    candidates = alloc<const OpKernel*>(n * per_op, "operator kernels");
    num_candidates = alloc<uint8_t>(n, "operator kernels");
    if (!candidates || !num_candidates) return Error::OutOfMemory;
    Error result = Error::Ok;
    for (uint32_t i = 0; i < n; ++i) {
      const fb::Operator* op = fm.operators()->Get(i);
      const char* overload = op->overload() ? op->overload()->c_str() : "";
      num_candidates[i] = static_cast<uint8_t>(
          find_kernels(op->name()->c_str(), overload, nullptr, candidates + i * per_op, per_op));
      if (num_candidates[i] == 0) {
        TERN_LOG_ERROR("method '%s': no kernel registered for operator %s%s%s (%zu kernel "
                       "libraries registered%s)", fm.name()->c_str(), op->name()->c_str(),
                       overload[0] ? "." : "", overload, per_op,
                       per_op ? "" : "; call tern::register_portable_kernels() first");
        result = Error::OperatorMissing;
      }
    }
    return result;
  }

  Span<const OpKernel* const> kernels_of(uint32_t op) const {
    const size_t per_op = kernel_libraries().size();
    return {candidates + op * per_op, num_candidates[op]};
  }
};

}  // namespace

Result<Method> Method::load(const Program& program, const char* name, MemoryManager& memory,
                            const MethodOptions& options) {
  const fb::Method* fm = program.method(name);
  if (fm == nullptr) {
    TERN_LOG_ERROR("the program has no method '%s'", name);
    return Error::NotFound;
  }
  if (memory.method_allocator == nullptr) {
    TERN_LOG_ERROR("Method::load('%s'): the memory manager has no method allocator", name);
    return Error::InvalidArgument;
  }
  Method m;
  TERN_CHECK_OK(m.set_threads(options));
  size_t used_before = memory.method_allocator->used();
  Loader ld{program, *fm, memory, m.threads_};
  TERN_CHECK_OK(ld.check_arenas());
  TERN_CHECK_OK(ld.init_values());
  TERN_CHECK_OK(ld.init_shapes());
  for (uint32_t i = 0; i < (fm->inputs() ? fm->inputs()->size() : 0); ++i) {
    if (!ld.writable(fm->inputs()->Get(i))) {
      TERN_LOG_ERROR("method '%s' input %u is not a planned tensor", name, i);
      return Error::InvalidProgram;
    }
  }
  TERN_CHECK_OK(ld.resolve_operators());

  m.fb_ = fm;
  m.name_ = fm->name()->c_str();
  m.values_ = ld.values;
  m.num_values_ = fm->values()->size();
  m.num_inputs_ = fm->inputs() ? fm->inputs()->size() : 0;
  m.num_outputs_ = fm->outputs() ? fm->outputs()->size() : 0;
  m.inputs_ = fm->inputs() ? fm->inputs()->data() : nullptr;
  m.outputs_ = fm->outputs() ? fm->outputs()->data() : nullptr;
  m.num_instructions_ = fm->instructions()->size();
  const size_t num_delegates = fm->delegates() ? fm->delegates()->size() : 0;
  m.delegates_ = ld.alloc<Delegate>(num_delegates, "delegates");
  m.instrs_ = ld.alloc<Instr>(m.num_instructions_, "instructions");
  if (!m.instrs_ || !m.delegates_) return Error::OutOfMemory;
  TERN_CHECK_OK(ld.bind_delegates(m.delegates_, &m.num_delegates_));
  TERN_CHECK_OK(ld.bind_instructions(m.instrs_, m.delegates_));
  TERN_CHECK_OK(ld.reserve_scratch(&m.scratch_, &m.scratch_stride_));
  m.scratch_bytes_ = ld.scratch;
  m.persistent_bytes_ = ld.persistent;
  m.shapes_ = ld.shapes;
  TERN_CHECK_OK(ld.poison_arena_gaps(&m.poisoned_, &m.num_poisoned_));
  m.metadata_bytes_ = memory.method_allocator->used() - used_before;
  m.reset_state();
  return m;
}

Error Method::set_threads(const MethodOptions& options) {
  if (options.threads < 1 || options.threads > ThreadPool::kMaxThreads) {
    TERN_LOG_ERROR("Method::load: %d threads requested, 1 to %d supported", options.threads,
                   ThreadPool::kMaxThreads);
    return Error::InvalidArgument;
  }
  threads_ = options.threads;
  max_loop_instructions_ = options.max_loop_instructions;
  if (threads_ > 1) {
    pool_ = options.pool ? options.pool : &ThreadPool::process_pool();
    TERN_CHECK_OK(pool_->reserve(threads_));
  }
  return Error::Ok;
}

}  // namespace tern
