#include "runtime/format/verify.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/overflow.h"
#include "runtime/core/scalar_type.h"
#include "schema/tern_generated.h"

namespace tern {
namespace {

uint32_t count(const flatbuffers::Vector<uint32_t>* v) { return v ? v->size() : 0; }

// The most bytes a tensor or an arena may have (256 TiB, beyond any device):
// sizes below it leave room to add offsets and round up without overflow.
constexpr uint64_t kMaxBytes = uint64_t(1) << 48;

Error verify_tensor(const char* m, uint32_t vi, const fb::Tensor& t, const SegmentInfo* segments,
                    uint64_t num_segments, const flatbuffers::Vector<uint64_t>* arenas) {
  int st = static_cast<int>(t.scalar_type());
  if (!scalar_type_valid(st)) return invalid_program("method '%s' value %u: unknown scalar type %d", m, vi, st);
  if (!items_aligned(t.sizes())) return invalid_program("method '%s' value %u: misaligned sizes", m, vi);
  uint32_t dim = t.sizes() ? t.sizes()->size() : 0;
  if (dim > static_cast<uint32_t>(kMaxDims)) {
    return invalid_program("method '%s' value %u: %u dimensions, at most %d supported", m, vi, dim, kMaxDims);
  }
  // The bytes the sizes span with every 0 taken as 1 stay under 2^48, so no
  // product of sizes (strides, numel) overflows, even in an empty tensor.
  uint64_t nbytes = 0;
  const int bad = checked_span(static_cast<int>(dim), [&](int d) { return t.sizes()->Get(static_cast<uint32_t>(d)); },
                               scalar_type_size(static_cast<ScalarType>(st)), kMaxBytes, &nbytes);
  if (bad >= 0) {
    const long long s = t.sizes()->Get(static_cast<uint32_t>(bad));
    if (s < 0) return invalid_program("method '%s' value %u: negative size %lld in dim %d", m, vi, s, bad);
    return invalid_program("method '%s' value %u: sizes overflow 2^48 bytes at dim %d (size %lld)", m, vi, bad, s);
  }
  uint64_t end;
  switch (t.storage()) {
    case fb::TensorStorage::None:
      if (nbytes != 0) return invalid_program("method '%s' value %u: %llu-byte tensor without storage", m, vi, (unsigned long long)nbytes);
      return Error::Ok;
    case fb::TensorStorage::Constant:
      if (t.segment() >= num_segments) {
        return invalid_program("method '%s' value %u: segment %u out of range (%llu segments)", m, vi,
                    t.segment(), (unsigned long long)num_segments);
      }
      if (!checked_add(t.offset(), nbytes, &end) || end > segments[t.segment()].size) {
        return invalid_program("method '%s' value %u: constant [%llu, +%llu) outside segment %u (%llu bytes)",
                    m, vi, (unsigned long long)t.offset(), (unsigned long long)nbytes, t.segment(),
                    (unsigned long long)segments[t.segment()].size);
      }
      break;
    case fb::TensorStorage::Planned:
    case fb::TensorStorage::State:
      if (arenas == nullptr || t.arena() >= arenas->size()) {
        return invalid_program("method '%s' value %u: arena %u out of range (%u arenas)", m, vi, t.arena(),
                    arenas ? arenas->size() : 0);
      }
      if (!checked_add(t.offset(), nbytes, &end) || end > arenas->Get(t.arena())) {
        return invalid_program("method '%s' value %u: planned [%llu, +%llu) outside arena %u (%llu bytes)", m,
                    vi, (unsigned long long)t.offset(), (unsigned long long)nbytes, t.arena(),
                    (unsigned long long)arenas->Get(t.arena()));
      }
      break;
    default:
      return invalid_program("method '%s' value %u: unknown storage %d", m, vi, static_cast<int>(t.storage()));
  }
  // Inside its storage (checked above), but elements read through a T* need
  // an offset that is a multiple of sizeof(T) (the storage itself is aligned).
  const size_t elem = scalar_type_size(static_cast<ScalarType>(st));
  if (t.offset() % elem != 0) {
    const bool constant = t.storage() == fb::TensorStorage::Constant;
    return invalid_program("method '%s' value %u: %s offset %llu in %s %u (%llu bytes) is not a multiple of its "
                           "element size %zu (%s)", m, vi, constant ? "constant" : "planned",
                           (unsigned long long)t.offset(), constant ? "segment" : "arena",
                           constant ? t.segment() : t.arena(),
                           (unsigned long long)(constant ? segments[t.segment()].size : arenas->Get(t.arena())), elem,
                           scalar_type_name(static_cast<ScalarType>(st)));
  }
  return Error::Ok;
}

// A size expression reference (format 1.3): -1 (static) or an index in
// Method.size_exprs.
Error verify_expr_ref(const fb::Method& method, uint32_t vi, int32_t e, const char* where) {
  const uint32_t n = method.size_exprs() ? method.size_exprs()->size() : 0;
  if (e < -1 || (e >= 0 && static_cast<uint32_t>(e) >= n)) {
    return invalid_program("method '%s' value %u: %s refers to size expression %d (%u expressions)",
                           method.name()->c_str(), vi, where, e, n);
  }
  return Error::Ok;
}

// Tensor.dyn_sizes, Int.expr, IntList.exprs (format 1.3): empty or one per
// dim or item, each in range. Checked in every method, dynamic or not:
// MethodMeta::input_dim_range reads dyn_sizes of any input.
Error verify_expr_refs(const fb::Method& method, uint32_t vi) {
  const char* m = method.name()->c_str();
  const fb::EValue* v = method.values()->Get(vi);
  if (const fb::Int* n = v->value_as_Int()) return verify_expr_ref(method, vi, n->expr(), "an Int");
  const flatbuffers::Vector<int32_t>* refs = nullptr;
  uint32_t want = 0;
  const char* where = "";
  if (const fb::Tensor* t = v->value_as_Tensor()) {
    refs = t->dyn_sizes();
    want = t->sizes() ? t->sizes()->size() : 0;
    if (refs != nullptr && refs->size() != 0 && refs->size() != want) {
      return invalid_program("method '%s' value %u: %u dynamic sizes for %u dims", m, vi, refs->size(), want);
    }
    where = "a dim";
  } else if (const fb::IntList* l = v->value_as_IntList()) {
    refs = l->exprs();
    want = l->items()->size();
    if (refs != nullptr && refs->size() != 0 && refs->size() != want) {
      return invalid_program("method '%s' value %u: %u expressions for %u IntList items", m, vi, refs->size(), want);
    }
    where = "an IntList item";
  }
  for (uint32_t i = 0; refs != nullptr && i < refs->size(); ++i) TERN_CHECK_OK(verify_expr_ref(method, vi, refs->Get(i), where));
  return Error::Ok;
}

bool is_tensor(const fb::Method& method, int64_t index) {
  return index >= 0 && index < method.values()->size() &&
         method.values()->Get(static_cast<uint32_t>(index))->value_type() == fb::Value::Tensor;
}

Error verify_value(const fb::Method& method, uint32_t vi, const SegmentInfo* segments,
                   uint64_t num_segments) {
  const char* m = method.name()->c_str();
  const fb::EValue* v = method.values()->Get(vi);
  // The FlatBuffers verifier accepts a union whose type is set but whose
  // table is absent; every value_as_X() below relies on this check.
  if (v->value_type() != fb::Value::NONE && v->value() == nullptr) {
    return invalid_program("method '%s' value %u: type %d without a table", m, vi, static_cast<int>(v->value_type()));
  }
  switch (v->value_type()) {
    case fb::Value::NONE:
      return Error::Ok;
    case fb::Value::Tensor:
      return verify_tensor(m, vi, *v->value_as_Tensor(), segments, num_segments, method.arena_sizes());
    case fb::Value::Int:
    case fb::Value::Double:
    case fb::Value::Bool:
      return Error::Ok;
    case fb::Value::String:
      if (!v->value_as_String()->value()) return invalid_program("method '%s' value %u: String without text", m, vi);
      return Error::Ok;
    case fb::Value::IntList:
      if (!v->value_as_IntList()->items()) return invalid_program("method '%s' value %u: IntList without items", m, vi);
      if (!items_aligned(v->value_as_IntList()->items())) return invalid_program("method '%s' value %u: misaligned IntList", m, vi);
      return Error::Ok;
    case fb::Value::DoubleList:
      if (!v->value_as_DoubleList()->items()) return invalid_program("method '%s' value %u: DoubleList without items", m, vi);
      if (!items_aligned(v->value_as_DoubleList()->items())) return invalid_program("method '%s' value %u: misaligned DoubleList", m, vi);
      return Error::Ok;
    case fb::Value::BoolList:
      if (!v->value_as_BoolList()->items()) return invalid_program("method '%s' value %u: BoolList without items", m, vi);
      return Error::Ok;
    case fb::Value::TensorList: {
      const auto* items = v->value_as_TensorList()->items();
      if (!items) return invalid_program("method '%s' value %u: TensorList without items", m, vi);
      for (uint32_t i = 0; i < items->size(); ++i) {
        if (!is_tensor(method, items->Get(i))) {
          return invalid_program("method '%s' value %u: TensorList item %u (value %u) is not a tensor", m, vi, i, items->Get(i));
        }
      }
      return Error::Ok;
    }
    case fb::Value::OptionalTensorList: {
      const auto* items = v->value_as_OptionalTensorList()->items();
      if (!items) return invalid_program("method '%s' value %u: OptionalTensorList without items", m, vi);
      for (uint32_t i = 0; i < items->size(); ++i) {
        if (items->Get(i) != -1 && !is_tensor(method, items->Get(i))) {
          return invalid_program("method '%s' value %u: OptionalTensorList item %u (value %d) is not a tensor or -1", m, vi, i, items->Get(i));
        }
      }
      return Error::Ok;
    }
  }
  return invalid_program("method '%s' value %u: unknown value type %d", m, vi, static_cast<int>(v->value_type()));
}

Error verify_instruction(const fb::Method& method, uint32_t ii) {
  const char* m = method.name()->c_str();
  uint32_t nv = method.values()->size();
  uint32_t ni = method.instructions()->size();
  const fb::Instruction* ins = method.instructions()->Get(ii);
  if (ins->kind() == nullptr) {
    return invalid_program("method '%s' instruction %u: kind %d without a table", m, ii, static_cast<int>(ins->kind_type()));
  }
  switch (ins->kind_type()) {
    case fb::InstructionKind::KernelCall: {
      const fb::KernelCall* k = ins->kind_as_KernelCall();
      if (k->op() >= (method.operators() ? method.operators()->size() : 0)) {
        return invalid_program("method '%s' instruction %u: operator %u out of range (%u operators)", m, ii, k->op(),
                               method.operators() ? method.operators()->size() : 0);
      }
      for (uint32_t i = 0; i < count(k->args()); ++i) {
        if (k->args()->Get(i) >= nv) {
          return invalid_program("method '%s' instruction %u: argument %u is value %u, out of range (%u values)",
                      m, ii, i, k->args()->Get(i), nv);
        }
      }
      return Error::Ok;
    }
    case fb::InstructionKind::Move: {
      const fb::Move* mv = ins->kind_as_Move();
      if (mv->from() >= nv || mv->to() >= nv) {
        return invalid_program("method '%s' instruction %u: move from value %u to value %u, out of range (%u values)", m,
                               ii, mv->from(), mv->to(), nv);
      }
      return Error::Ok;
    }
    case fb::InstructionKind::JumpFalse: {
      const fb::JumpFalse* j = ins->kind_as_JumpFalse();
      if (j->cond() >= nv) {
        return invalid_program("method '%s' instruction %u: jump condition value %u out of range (%u values)", m, ii,
                               j->cond(), nv);
      }
      // Any instruction, or the end. A backward jump (a loop, format 1.2) is
      // bounded at run time by MethodOptions::max_loop_instructions, so a
      // file cannot make execute() run forever.
      if (j->target() > ni) {
        return invalid_program("method '%s' instruction %u: jump target %u is out of range (%u instructions)", m, ii,
                       j->target(), ni);
      }
      return Error::Ok;
    }
    case fb::InstructionKind::Free:
      if (ins->kind_as_Free()->value() >= nv) {
        return invalid_program("method '%s' instruction %u: free of value %u, out of range (%u values)", m, ii,
                               ins->kind_as_Free()->value(), nv);
      }
      return Error::Ok;
    case fb::InstructionKind::BackendCall: {
      const uint32_t d = ins->kind_as_BackendCall()->delegate();
      const uint32_t nd = method.delegates() ? method.delegates()->size() : 0;
      if (d >= nd) return invalid_program("method '%s' instruction %u: delegate %u out of range (%u delegates)", m, ii, d, nd);
      return Error::Ok;
    }
    default:
      return invalid_program("method '%s' instruction %u: unknown kind %d", m, ii, static_cast<int>(ins->kind_type()));
  }
}

// Backend names are short identifiers; a bound keeps log lines and lookups sane.
constexpr uint32_t kMaxBackendName = 64;

Error verify_delegate(const fb::Method& method, uint32_t di, uint64_t num_segments) {
  const char* m = method.name()->c_str();
  const fb::Delegate* d = method.delegates()->Get(di);
  if (d->backend() == nullptr || d->backend()->size() == 0 || d->backend()->size() > kMaxBackendName) {
    return invalid_program("method '%s' delegate %u: backend name missing or longer than %u bytes", m, di, kMaxBackendName);
  }
  if (d->payload_segment() >= num_segments) {
    return invalid_program("method '%s' delegate %u (%s): payload segment %u out of range (%llu segments)", m, di,
                   d->backend()->c_str(), d->payload_segment(), (unsigned long long)num_segments);
  }
  const flatbuffers::Vector<uint32_t>* lists[] = {d->inputs(), d->outputs()};
  for (int k = 0; k < 2; ++k) {
    for (uint32_t i = 0; i < count(lists[k]); ++i) {
      if (!is_tensor(method, lists[k]->Get(i))) {
        return invalid_program("method '%s' delegate %u (%s): %s %u (value %u) is not a tensor value", m, di,
                       d->backend()->c_str(), k == 0 ? "input" : "output", i, lists[k]->Get(i));
      }
    }
  }
  return Error::Ok;
}

// State names are buffer paths ("encoder.layers.0.cache"); a bound keeps log
// lines and lookups sane.
constexpr uint32_t kMaxStateName = 256;

const fb::Tensor* tensor_of(const fb::Method& method, uint32_t vi) {
  return vi < method.values()->size() ? method.values()->Get(vi)->value_as_Tensor() : nullptr;
}

// Method.state (format 1.2): one entry per State tensor, sorted by value (so
// each State tensor has exactly one, checked in one pass), each with an
// initial value of the same dtype and sizes that is read-only.
Error verify_state(const fb::Method& method) {
  const char* m = method.name()->c_str();
  const uint32_t n = method.state() ? method.state()->size() : 0;
  uint32_t num_state_tensors = 0;
  for (uint32_t vi = 0; vi < method.values()->size(); ++vi) {
    const fb::Tensor* t = tensor_of(method, vi);
    num_state_tensors += t != nullptr && t->storage() == fb::TensorStorage::State;
  }
  if (num_state_tensors != n) {
    return invalid_program("method '%s': %u tensors have State storage, but the state list has %u entries", m,
                   num_state_tensors, n);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const fb::StateTensor* s = method.state()->Get(i);
    if (s->name() == nullptr || s->name()->size() > kMaxStateName) {
      return invalid_program("method '%s' state %u: name missing or longer than %u bytes", m, i, kMaxStateName);
    }
    if (i > 0 && s->value() <= method.state()->Get(i - 1)->value()) {
      return invalid_program("method '%s' state %u (%s): values are not in increasing order", m, i, s->name()->c_str());
    }
    const fb::Tensor* v = tensor_of(method, s->value());
    if (v == nullptr || v->storage() != fb::TensorStorage::State) {
      return invalid_program("method '%s' state %u (%s): value %u is not a State tensor", m, i, s->name()->c_str(), s->value());
    }
    const fb::Tensor* init = tensor_of(method, s->initial());
    if (init == nullptr ||
        (init->storage() != fb::TensorStorage::Constant && init->storage() != fb::TensorStorage::None)) {
      return invalid_program("method '%s' state %u (%s): initial value %u is not a constant tensor", m, i,
                     s->name()->c_str(), s->initial());
    }
    Tensor a, b;
    tensor_shape_from_fb(*v, &a);
    tensor_shape_from_fb(*init, &b);
    if (a.dtype != b.dtype || !tensor_same_shape(a, b)) {
      return invalid_program("method '%s' state %u (%s): the initial value's dtype or sizes differ from the state's", m,
                     i, s->name()->c_str());
    }
  }
  return Error::Ok;
}

}  // namespace

Error verify_method(const fb::Method& method, const SegmentInfo* segments, uint64_t num_segments) {
  if (!method.name()) return invalid_program("a method has no name");
  const char* m = method.name()->c_str();
  if (!method.values() || !method.instructions()) return invalid_program("method '%s' has no values or instructions", m);
  if (!items_aligned(method.arena_sizes())) return invalid_program("method '%s': misaligned arena_sizes", m);
  for (uint32_t i = 0; i < (method.arena_sizes() ? method.arena_sizes()->size() : 0); ++i) {
    if (method.arena_sizes()->Get(i) > kMaxBytes) {
      return invalid_program("method '%s' arena %u: arena_sizes says %llu bytes, more than 2^48", m, i,
                             (unsigned long long)method.arena_sizes()->Get(i));
    }
  }
  if (method.operators()) {
    for (uint32_t i = 0; i < method.operators()->size(); ++i) {
      if (!method.operators()->Get(i)->name()) return invalid_program("method '%s' operator %u has no name", m, i);
    }
  }
  for (uint32_t i = 0; i < method.values()->size(); ++i) {
    TERN_CHECK_OK(verify_value(method, i, segments, num_segments));
    TERN_CHECK_OK(verify_expr_refs(method, i));
  }
  for (uint32_t i = 0; i < count(method.inputs()); ++i) {
    if (!is_tensor(method, method.inputs()->Get(i))) {
      return invalid_program("method '%s' input %u (value %u) is not a tensor value", m, i, method.inputs()->Get(i));
    }
  }
  for (uint32_t i = 0; i < count(method.outputs()); ++i) {
    if (!is_tensor(method, method.outputs()->Get(i))) {
      return invalid_program("method '%s' output %u (value %u) is not a tensor value", m, i, method.outputs()->Get(i));
    }
  }
  for (uint32_t i = 0; i < (method.delegates() ? method.delegates()->size() : 0); ++i) {
    TERN_CHECK_OK(verify_delegate(method, i, num_segments));
  }
  for (uint32_t i = 0; i < method.instructions()->size(); ++i) {
    TERN_CHECK_OK(verify_instruction(method, i));
  }
  TERN_CHECK_OK(verify_state(method));
  const bool dynamic = (method.symbols() && method.symbols()->size()) || (method.size_exprs() && method.size_exprs()->size());
  if (dynamic && verify_dynamic_shapes == nullptr) {
    TERN_LOG_ERROR("method '%s' has dynamic shapes (format 1.3), which this runtime leaves out: call "
                   "tern::enable_dynamic_shapes() before loading (tern::Module does)", m);
    return Error::NotSupported;
  }
  if (dynamic) TERN_CHECK_OK(verify_dynamic_shapes(method));
  if (method.debug() && method.debug()->size() != 0 &&
      method.debug()->size() != method.instructions()->size()) {
    return invalid_program("method '%s': %u debug entries for %u instructions", m, method.debug()->size(),
                method.instructions()->size());
  }
  return Error::Ok;
}

int compare_metadata_keys(const char* a, size_t na, const char* b, size_t nb) {
  const int c = memcmp(a, b, na < nb ? na : nb);
  if (c != 0) return c;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

Error verify_metadata(const fb::Program& program) {
  const auto* entries = program.metadata();
  const uint32_t n = entries ? entries->size() : 0;
  if (n > kMaxMetadataEntries) {
    return invalid_program("metadata: %u entries, at most %u", n, kMaxMetadataEntries);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Metadata* e = entries->Get(i);
    const flatbuffers::String* key = e->key();
    if (key == nullptr || key->size() == 0 || key->size() > kMaxMetadataKey) {
      return invalid_program("metadata entry %u: key missing, empty or longer than %u bytes (%u)", i,
                             kMaxMetadataKey, key ? key->size() : 0);
    }
    if (memchr(key->data(), '\0', key->size()) != nullptr) {
      return invalid_program("metadata entry %u: key contains a NUL byte", i);
    }
    if (e->value() == nullptr) return invalid_program("metadata entry %u ('%s'): no value", i, key->c_str());
    if (i == 0) continue;
    const flatbuffers::String* prev = entries->Get(i - 1)->key();
    const int c = compare_metadata_keys(prev->data(), prev->size(), key->data(), key->size());
    if (c == 0) return invalid_program("metadata entry %u: key '%s' appears twice (entries %u and %u)", i, key->c_str(), i - 1, i);
    if (c > 0) {
      return invalid_program("metadata entry %u: key '%s' is not after '%s' (keys must be sorted bytewise)", i,
                             key->c_str(), entries->Get(i - 1)->key()->c_str());
    }
  }
  return Error::Ok;
}

void tensor_shape_from_fb(const fb::Tensor& t, Tensor* out) {
  out->dtype = static_cast<ScalarType>(t.scalar_type());
  out->dim = t.sizes() ? static_cast<int32_t>(t.sizes()->size()) : 0;
  out->numel = 1;
  for (int d = 0; d < out->dim; ++d) {
    out->sizes[d] = t.sizes()->Get(d);
    out->numel *= out->sizes[d];
  }
}

}  // namespace tern

namespace tern {

Error (*verify_dynamic_shapes)(const fb::Method& method) = nullptr;

Error invalid_program(const char* fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  TERN_LOG_ERROR("invalid program: %s", msg);
  return Error::InvalidProgram;
}

int64_t size_expr_is_symbol(const fb::Method& method, int32_t e) {
  if (e < 0 || method.size_exprs() == nullptr || static_cast<uint32_t>(e) >= method.size_exprs()->size()) return -1;
  const auto* code = method.size_exprs()->Get(static_cast<uint32_t>(e))->code();
  return code && code->size() == 2 && code->Get(0) == 1 /* ExprOp::Symbol */ ? code->Get(1) : -1;
}

}  // namespace tern
