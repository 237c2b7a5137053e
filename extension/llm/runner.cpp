#include "extension/llm/runner.h"

#include <cmath>
#include <new>

#include "runtime/core/log.h"

namespace tern::llm {

namespace {

constexpr const char* kMethod = "forward";

template <typename T>
std::unique_ptr<T[]> heap(size_t n, const char* what) {
  std::unique_ptr<T[]> p(new (std::nothrow) T[n]());
  if (!p) TERN_LOG_ERROR("llm runner: out of memory for %zu bytes of %s", n * sizeof(T), what);
  return p;
}

}  // namespace

Runner::Runner() = default;
Runner::~Runner() = default;

Error Runner::load(const char* path, const Options& options) {
  position_ = 0;
  logits_ = {};
  tokens_.reset();  // feed() refuses to run until this load has succeeded
  TERN_CHECK_OK(module_.load(path, Module::Options{options.load_mode, options.threads}));
  Result<MethodMeta> meta = module_.program().method_meta(kMethod);
  if (!meta.ok()) {
    TERN_LOG_ERROR("%s: no method '%s'; a language model's file is written by tern.llm.export", path, kMethod);
    return Error::InvalidArgument;
  }
  // (tokens int64 [1, T], positions int64 [T], mask float32 [T, L]) -> float32 [1, vocab]
  Result<TensorInfo> tokens = meta->input(0), positions = meta->input(1), mask = meta->input(2);
  Result<TensorInfo> out = meta->output(0);
  const bool shaped = meta->num_inputs() == 3 && meta->num_outputs() == 1 && tokens.ok() && positions.ok() &&
                      mask.ok() && out.ok() && tokens->dtype == ScalarType::Int64 && tokens->dim() == 2 &&
                      tokens->sizes[0] == 1 && positions->dtype == ScalarType::Int64 && positions->dim() == 1 &&
                      mask->dtype == ScalarType::Float32 && mask->dim() == 2 && out->dtype == ScalarType::Float32 &&
                      out->dim() == 2 && out->sizes[0] == 1;
  if (!shaped) {
    TERN_LOG_ERROR("%s: method '%s' is not a decoder step: it should take (tokens int64 [1, T], positions int64 [T], "
                   "mask float32 [T, L]) and return logits float32 [1, vocab] (tern.llm.export)",
                   path, kMethod);
    return Error::InvalidArgument;
  }
  max_step_ = static_cast<int>(tokens->sizes[1]);
  max_context_ = static_cast<int>(mask->sizes[1]);
  vocab_ = static_cast<int>(out->sizes[1]);
  if (positions->sizes[0] != max_step_ || mask->sizes[0] != max_step_ || max_step_ < 1 || max_context_ < max_step_) {
    TERN_LOG_ERROR("%s: the decoder's inputs disagree: tokens [1, %d], positions [%lld], mask [%lld, %d]", path,
                   max_step_, static_cast<long long>(positions->sizes[0]), static_cast<long long>(mask->sizes[0]),
                   max_context_);
    return Error::InvalidArgument;
  }
  tokens_ = heap<int64_t>(max_step_, "token ids");
  positions_ = heap<int64_t>(max_step_, "positions");
  mask_ = heap<float>(static_cast<size_t>(max_step_) * max_context_, "the attention mask");
  if (!tokens_ || !positions_ || !mask_) return Error::OutOfMemory;
  return module_.method(kMethod) != nullptr ? Error::Ok : Error::InvalidArgument;
}

void Runner::reset() {
  position_ = 0;
  logits_ = {};
}

Error Runner::feed(Span<const int32_t> ids) {
  if (!tokens_) {
    TERN_LOG_ERROR("llm runner: feed() before a successful load()");
    return Error::InvalidArgument;
  }
  if (ids.size() == 0) {
    TERN_LOG_ERROR("llm runner: no tokens to feed");
    return Error::InvalidArgument;
  }
  if (ids.size() > static_cast<size_t>(max_context_ - position_)) {
    TERN_LOG_ERROR("llm runner: %zu tokens after the %d in the sequence exceed its context of %d tokens", ids.size(),
                   position_, max_context_);
    return Error::InvalidArgument;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_) {
      TERN_LOG_ERROR("llm runner: token %zu is id %d, outside the vocabulary [0, %d)", i, ids[i], vocab_);
      return Error::InvalidArgument;
    }
  }
  for (size_t at = 0; at < ids.size(); at += max_step_) {
    const int n = static_cast<int>(ids.size() - at < static_cast<size_t>(max_step_) ? ids.size() - at : max_step_);
    TERN_CHECK_OK(step(ids.data() + at, n));
  }
  return Error::Ok;
}

Error Runner::step(const int32_t* ids, int n) {
  const int length = position_ + n;  // the cache positions this step attends
  for (int i = 0; i < n; ++i) {
    tokens_[i] = ids[i];
    positions_[i] = position_ + i;
    float* row = mask_.get() + static_cast<size_t>(i) * length;
    for (int j = 0; j < length; ++j) row[j] = j <= position_ + i ? 0.0f : -INFINITY;
  }
  const Tensor inputs[3] = {make_tensor(tokens_.get(), ScalarType::Int64, {1, n}),
                            make_tensor(positions_.get(), ScalarType::Int64, {n}),
                            make_tensor(mask_.get(), ScalarType::Float32, {n, length})};
  Result<Span<const Tensor>> out = module_.run(kMethod, {inputs, 3});
  if (!out.ok()) {
    logits_ = {};
    return out.error();
  }
  position_ = length;
  const Tensor& logits = (*out)[0];
  logits_ = Span<const float>(logits.data_as<const float>(), static_cast<size_t>(vocab_));
  return Error::Ok;
}

}  // namespace tern::llm
