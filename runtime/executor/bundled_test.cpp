#include "runtime/executor/bundled_test.h"

#include "schema/tern_generated.h"

namespace tern {
namespace {

BundledTensor bundled_tensor(const fb::BundledTensor& t) {
  BundledTensor out;
  out.info.dtype = static_cast<ScalarType>(t.scalar_type());
  if (t.sizes() != nullptr) out.info.sizes = Span<const int64_t>(t.sizes()->data(), t.sizes()->size());
  if (t.data() != nullptr) out.data = Span<const uint8_t>(t.data()->data(), t.data()->size());
  return out;
}

}  // namespace

const char* BundledTest::method() const { return t_->method()->c_str(); }  // present: verify_self_tests

size_t BundledTest::num_inputs() const { return t_->inputs() ? t_->inputs()->size() : 0; }

BundledTensor BundledTest::input(size_t i) const { return bundled_tensor(*t_->inputs()->Get(static_cast<uint32_t>(i))); }

size_t BundledTest::num_expected() const { return t_->expected() ? t_->expected()->size() : 0; }

BundledTensor BundledTest::expected(size_t i) const {
  return bundled_tensor(*t_->expected()->Get(static_cast<uint32_t>(i)));
}

double BundledTest::rtol(size_t i) const { return t_->rtol()->Get(static_cast<uint32_t>(i)); }

double BundledTest::atol(size_t i) const { return t_->atol()->Get(static_cast<uint32_t>(i)); }

}  // namespace tern
