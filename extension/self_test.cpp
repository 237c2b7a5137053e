#include "extension/self_test.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "extension/module.h"
#include "runtime/core/half_bits.h"
#include "runtime/core/log.h"
#include "runtime/core/sizes_text.h"

namespace tern {
namespace {

bool is_integral(ScalarType t) { return !scalar_type_is_floating(t); }

// Element i of `p` as a T, through memcpy: the file's bytes are not aligned
// for their type. integer_at (integers and bool) and floating_at read one of
// dtype t.
template <typename T>
T load(const void* p, int64_t i) {
  T v;
  memcpy(&v, static_cast<const uint8_t*>(p) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

int64_t integer_at(const void* p, ScalarType t, int64_t i) {
  switch (t) {
    case ScalarType::Int8: return load<int8_t>(p, i);
    case ScalarType::UInt8:
    case ScalarType::Bool: return load<uint8_t>(p, i);
    case ScalarType::Int16: return load<int16_t>(p, i);
    case ScalarType::Int32: return load<int32_t>(p, i);
    case ScalarType::Int64: return load<int64_t>(p, i);
    default: return 0;
  }
}

double floating_at(const void* p, ScalarType t, int64_t i) {
  switch (t) {
    case ScalarType::Float32: return load<float>(p, i);
    case ScalarType::Float64: return load<double>(p, i);
    case ScalarType::Float16: return half_bits_to_float(load<uint16_t>(p, i));
    case ScalarType::BFloat16: return bfloat16_bits_to_float(load<uint16_t>(p, i));
    default: return static_cast<double>(integer_at(p, t, i));
  }
}

// |a - b| of two int64, exact as an unsigned difference (it fits in uint64),
// then rounded to double: never 0 when a != b.
double integer_distance(int64_t a, int64_t b) {
  const uint64_t d = a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                           : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
  return static_cast<double>(d);
}

// "float32 [2, 3]"
void shape_text(ScalarType t, const int64_t* sizes, int dim, char* out, size_t n) {
  char text[96];
  snprintf(out, n, "%s %s", scalar_type_name(t), sizes_text(sizes, dim, text, sizeof(text)));
}

// The record of output k of test i before it is compared.
SelfTestRecord record_of(size_t i, const BundledTest& t, size_t k) {
  SelfTestRecord r;
  r.test = i;
  r.method = t.method();
  r.output = k;
  r.expected = t.expected(k);
  r.rtol = t.rtol(k);
  r.atol = t.atol(k);
  return r;
}

// Sets the inputs of test t, runs it; on failure, the reason in `why`.
Error run_test(Method& m, const BundledTest& t, char* why, size_t n) {
  if (t.num_inputs() != m.num_inputs() || t.num_expected() != m.num_outputs()) {
    snprintf(why, n, "the test has %zu inputs and %zu expected outputs; method '%s' takes %zu and returns %zu",
             t.num_inputs(), t.num_expected(), t.method(), m.num_inputs(), m.num_outputs());
    return Error::InvalidArgument;
  }
  clear_last_error();
  for (size_t j = 0; j < t.num_inputs(); ++j) {
    const BundledTensor in = t.input(j);
    // set_input copies the bytes (memcpy), so their alignment does not matter.
    const Tensor x = make_tensor(const_cast<uint8_t*>(in.data.data()), in.info.dtype, in.info.sizes.data(), in.info.dim());
    if (const Error e = m.set_input(j, x); e != Error::Ok) {
      snprintf(why, n, "input %zu: %s", j, last_error_message());
      return e;
    }
  }
  if (const Error e = m.execute(); e != Error::Ok) {
    snprintf(why, n, "%s", last_error_message());
    return e;
  }
  return Error::Ok;
}

// Compares output r.output of `m` into r (a record from record_of).
void check_output(const Method& m, SelfTestRecord& r) {
  const Tensor& got = m.output(r.output);
  const TensorInfo& want = r.expected.info;
  bool same = got.dtype == want.dtype && got.dim == want.dim();
  for (int d = 0; same && d < got.dim; ++d) same = got.sizes[d] == want.sizes[d];
  if (!same) {
    char g[128], w[128];
    shape_text(got.dtype, got.sizes, got.dim, g, sizeof(g));
    shape_text(want.dtype, want.sizes.data(), want.dim(), w, sizeof(w));
    r.error = Error::InvalidArgument;
    snprintf(r.message, sizeof(r.message), "the output is %s, expected %s", g, w);
    return;
  }
  r.comparison = compare_output(got, r.expected, r.rtol, r.atol);
  r.passed = r.comparison.passed;
  if (!r.passed) {
    const OutputComparison& c = r.comparison;
    snprintf(r.message, sizeof(r.message),
             "max abs error %.6g (max rel %.6g), worst at element %lld: got %.9g, expected %.9g; tolerance atol %g + "
             "rtol %g * |expected|", c.max_abs_error, c.max_rel_error, (long long)c.worst_index, c.worst_got,
             c.worst_expected, r.atol, r.rtol);
  }
}

}  // namespace

OutputComparison compare_output(const Tensor& got, const BundledTensor& expected, double rtol, double atol) {
  OutputComparison c;
  const ScalarType t = expected.info.dtype;
  double worst_margin = -INFINITY;
  for (int64_t i = 0; i < got.numel; ++i) {
    const double g = floating_at(got.data, t, i), e = floating_at(expected.data.data(), t, i);
    const double allowed = atol + rtol * std::fabs(e);  // inf or NaN when e is
    double d;
    bool ok;
    if (is_integral(t)) {
      d = integer_distance(integer_at(got.data, t, i), integer_at(expected.data.data(), t, i));
      ok = d <= allowed;
    } else if (std::isfinite(g) && std::isfinite(e)) {
      d = std::fabs(g - e);
      ok = d <= allowed;
    } else {
      ok = (std::isnan(g) && std::isnan(e)) || g == e;
      d = ok ? 0 : INFINITY;
    }
    // How far beyond its tolerance (negative: within it), to find the worst element.
    const double margin = std::isinf(d) ? INFINITY : std::isfinite(allowed) ? d - allowed : -INFINITY;
    if (d > c.max_abs_error) c.max_abs_error = d;
    if (e != 0 && !std::isnan(e) && d / std::fabs(e) > c.max_rel_error) c.max_rel_error = d / std::fabs(e);
    c.passed = c.passed && ok;
    if (margin > worst_margin || c.worst_index < 0) {
      worst_margin = margin;
      c.worst_index = i;
      c.worst_got = g;
      c.worst_expected = e;
    }
  }
  return c;
}

// Each test: reset the method's state, set the inputs, execute, compare
// every output, reset the state again. Failed outputs are not logged one by
// one: the records are the report, and one line (below) names the first.
Error Module::self_test(SelfTestReport report, void* context) {
  const size_t n = program_ ? program_->num_self_tests() : 0;
  if (n == 0) {
    TERN_LOG_ERROR("%s", program_ ? "the file has no bundled self-tests (export it with tern.export(..., bundle=[...]))"
                                  : "Module::self_test: no program loaded");
    return Error::NotFound;
  }
  size_t outputs = 0, failed = 0;
  Error result = Error::Ok;
  SelfTestRecord first_failure;
  for (size_t i = 0; i < n; ++i) {
    const BundledTest t = program_->self_test(i);
    char why[sizeof(SelfTestRecord::message)] = "";
    Method* m = nullptr;
    clear_last_error();
    Error e = load_method(t.method(), &m);
    if (e != Error::Ok) {
      snprintf(why, sizeof(why), "method '%s': %s", t.method(), last_error_message());
    } else {
      m->reset_state();
      e = run_test(*m, t, why, sizeof(why));
    }
    for (size_t k = 0; k < t.num_expected(); ++k) {
      SelfTestRecord r = record_of(i, t, k);
      if (e != Error::Ok) {
        r.error = e;
        snprintf(r.message, sizeof(r.message), "did not run: %s: %s", error_name(e), why);
      } else {
        check_output(*m, r);
      }
      ++outputs;
      if (!r.passed && failed++ == 0) first_failure = r;
      if (report != nullptr) report(r, context);
    }
    if (m != nullptr) m->reset_state();
    if (e != Error::Ok && result == Error::Ok) result = e;
  }
  if (failed == 0) return Error::Ok;
  const SelfTestRecord& f = first_failure;
  TERN_LOG_ERROR("self-test failed: %zu of %zu outputs; test %zu (method '%s') output %zu: %s", failed, outputs,
                 f.test, f.method, f.output, f.message);
  return result != Error::Ok ? result : Error::SelfTestFailed;
}

}  // namespace tern
