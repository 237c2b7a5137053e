#include "runtime/executor/method_meta.h"

#include "runtime/core/log.h"
#include "runtime/format/verify.h"
#include "schema/tern_generated.h"

namespace tern {
namespace {

uint32_t size_of(const flatbuffers::Vector<uint32_t>* v) { return v ? v->size() : 0; }

// The tensor of value `vi` (verified at load to be a tensor with aligned sizes).
TensorInfo tensor_info(const fb::Method& m, uint32_t vi) {
  const fb::Tensor* t = m.values()->Get(vi)->value_as_Tensor();
  TensorInfo info;
  info.dtype = static_cast<ScalarType>(t->scalar_type());
  if (t->sizes()) info.sizes = Span<const int64_t>(t->sizes()->data(), t->sizes()->size());
  return info;
}

Result<TensorInfo> tensor_at(const fb::Method& m, const flatbuffers::Vector<uint32_t>* list, size_t i,
                             const char* what) {
  if (i >= size_of(list)) {
    TERN_LOG_ERROR("method '%s' has %u %ss, no %s %zu", m.name()->c_str(), size_of(list), what, what, i);
    return Error::InvalidArgument;
  }
  return tensor_info(m, list->Get(static_cast<uint32_t>(i)));
}

}  // namespace

const char* MethodMeta::name() const { return m_->name()->c_str(); }

size_t MethodMeta::num_inputs() const { return size_of(m_->inputs()); }
size_t MethodMeta::num_outputs() const { return size_of(m_->outputs()); }
Result<TensorInfo> MethodMeta::input(size_t i) const { return tensor_at(*m_, m_->inputs(), i, "input"); }
Result<TensorInfo> MethodMeta::output(size_t i) const { return tensor_at(*m_, m_->outputs(), i, "output"); }

Result<DimRange> MethodMeta::input_dim_range(size_t i, int d) const {
  Result<TensorInfo> t = input(i);
  if (!t.ok()) return t.error();
  if (d < 0 || d >= t->dim()) {
    TERN_LOG_ERROR("method '%s' input %zu has %d dims, no dim %d", name(), i, t->dim(), d);
    return Error::InvalidArgument;
  }
  DimRange r;
  r.min = r.max = t->sizes[d];
  const auto* dyn = m_->values()->Get(m_->inputs()->Get(static_cast<uint32_t>(i)))->value_as_Tensor()->dyn_sizes();
  const int32_t e = dyn && dyn->size() ? dyn->Get(static_cast<uint32_t>(d)) : -1;
  if (e < 0) return r;
  r.dynamic = true;
  const int64_t sym = size_expr_is_symbol(*m_, e);
  if (sym < 0) {
    r.min = 0;
    return r;
  }
  const fb::Symbol* s = m_->symbols()->Get(static_cast<uint32_t>(sym));
  r.min = s->min();
  r.max = s->max();
  r.symbol = s->name()->c_str();
  return r;
}

size_t MethodMeta::num_arenas() const { return m_->arena_sizes() ? m_->arena_sizes()->size() : 0; }

Result<uint64_t> MethodMeta::arena_size(size_t i) const {
  if (i >= num_arenas()) {
    TERN_LOG_ERROR("method '%s' plans %zu arenas, no arena %zu", name(), num_arenas(), i);
    return Error::InvalidArgument;
  }
  return m_->arena_sizes()->Get(static_cast<uint32_t>(i));
}

size_t MethodMeta::num_instructions() const { return m_->instructions()->size(); }
size_t MethodMeta::num_operators() const { return m_->operators() ? m_->operators()->size() : 0; }

const char* MethodMeta::operator_name(size_t i) const {
  return i < num_operators() ? m_->operators()->Get(static_cast<uint32_t>(i))->name()->c_str() : "";
}

const char* MethodMeta::operator_overload(size_t i) const {
  if (i >= num_operators()) return "";
  const flatbuffers::String* o = m_->operators()->Get(static_cast<uint32_t>(i))->overload();
  return o ? o->c_str() : "";
}

size_t MethodMeta::num_delegates() const { return m_->delegates() ? m_->delegates()->size() : 0; }

const char* MethodMeta::delegate_backend(size_t i) const {
  return i < num_delegates() ? m_->delegates()->Get(static_cast<uint32_t>(i))->backend()->c_str() : "";
}

}  // namespace tern
