// Program.self_tests (verify.h): bundled test inputs and expected outputs,
// checked like every other part of an untrusted file, once, at load.
#include <cmath>

#include "runtime/core/overflow.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "runtime/format/verify.h"
#include "schema/tern_generated.h"

namespace tern {
namespace {

// A FlatBuffer holds less than 2 GiB: no tensor inline in one spans more.
constexpr uint64_t kMaxInlineBytes = uint64_t(1) << 31;

// `what` is "input" or "expected output"; t is list item j of test i.
Error verify_bundled_tensor(uint32_t i, const char* what, uint32_t j, const fb::BundledTensor& t) {
  const int st = static_cast<int>(t.scalar_type());
  if (!scalar_type_valid(st)) return invalid_program("self-test %u %s %u: unknown scalar type %d", i, what, j, st);
  if (!items_aligned(t.sizes())) return invalid_program("self-test %u %s %u: misaligned sizes", i, what, j);
  const uint32_t dim = t.sizes() ? t.sizes()->size() : 0;
  if (dim > static_cast<uint32_t>(kMaxDims)) {
    return invalid_program("self-test %u %s %u: %u dimensions, at most %d supported", i, what, j, dim, kMaxDims);
  }
  uint64_t nbytes = 0;
  const int bad = checked_span(static_cast<int>(dim), [&](int d) { return t.sizes()->Get(static_cast<uint32_t>(d)); },
                               scalar_type_size(static_cast<ScalarType>(st)), kMaxInlineBytes, &nbytes);
  if (bad >= 0) {
    const long long s = t.sizes()->Get(static_cast<uint32_t>(bad));
    if (s < 0) return invalid_program("self-test %u %s %u: negative size %lld in dim %d", i, what, j, s, bad);
    return invalid_program("self-test %u %s %u: sizes overflow 2^31 bytes at dim %d (size %lld)", i, what, j, bad, s);
  }
  const uint64_t have = t.data() ? t.data()->size() : 0;
  if (have != nbytes) {
    return invalid_program("self-test %u %s %u: %llu bytes of data, its %s sizes take %llu", i, what, j,
                           (unsigned long long)have, scalar_type_name(static_cast<ScalarType>(st)),
                           (unsigned long long)nbytes);
  }
  return Error::Ok;
}

using Tensors = flatbuffers::Vector<flatbuffers::Offset<fb::BundledTensor>>;

Error verify_bundled_tensors(uint32_t i, const char* what, const Tensors* list) {
  const uint32_t n = list ? list->size() : 0;
  if (n > kMaxSelfTestTensors) return invalid_program("self-test %u: %u %ss, at most %u", i, n, what, kMaxSelfTestTensors);
  for (uint32_t j = 0; j < n; ++j) TERN_CHECK_OK(verify_bundled_tensor(i, what, j, *list->Get(j)));
  return Error::Ok;
}

// rtol or atol of test i: one per expected output, each finite and >= 0.
Error verify_tolerances(uint32_t i, const char* what, const flatbuffers::Vector<double>* tol, uint32_t num_expected) {
  const uint32_t n = tol ? tol->size() : 0;
  if (n != num_expected) {
    return invalid_program("self-test %u: %u %s values for %u expected outputs", i, n, what, num_expected);
  }
  if (!items_aligned(tol)) return invalid_program("self-test %u: misaligned %s", i, what);
  for (uint32_t j = 0; j < n; ++j) {
    const double v = tol->Get(j);
    if (!std::isfinite(v) || v < 0) {
      return invalid_program("self-test %u expected output %u: %s %g is not a finite number >= 0", i, j, what, v);
    }
  }
  return Error::Ok;
}

}  // namespace

Error verify_self_tests(const fb::Program& program) {
  const auto* tests = program.self_tests();
  const uint32_t n = tests ? tests->size() : 0;
  if (n > kMaxSelfTests) return invalid_program("self-tests: %u bundled, at most %u", n, kMaxSelfTests);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::SelfTest* t = tests->Get(i);
    if (t->method() == nullptr) return invalid_program("self-test %u: no method name", i);
    TERN_CHECK_OK(verify_bundled_tensors(i, "input", t->inputs()));
    TERN_CHECK_OK(verify_bundled_tensors(i, "expected output", t->expected()));
    const uint32_t num_expected = t->expected() ? t->expected()->size() : 0;
    TERN_CHECK_OK(verify_tolerances(i, "rtol", t->rtol(), num_expected));
    TERN_CHECK_OK(verify_tolerances(i, "atol", t->atol(), num_expected));
  }
  return Error::Ok;
}

}  // namespace tern
