// Bundled self-tests: a .tern file may carry test inputs, the outputs eager
// PyTorch gave for them and a tolerance per output
// (tern.export(..., bundle=[...]); Program::self_test(i), BundledTest).
// Module::self_test() runs each on this device and compares, so that an
// application can check a downloaded model before it uses it:
//
//   tern::Module module;
//   if (module.load("model.tern") != tern::Error::Ok || module.self_test() != tern::Error::Ok) {
//     fprintf(stderr, "%s\n", tern::last_error_message());   // the first failed output, with its error
//     ...refuse the model...
//   }
//
// The rule, per element of an output, with e the expected and g the computed
// value (in double; integers and bool exactly, in int64):
//   - both finite: passes when |g - e| <= atol + rtol * |e|;
//   - otherwise (a NaN or an inf on either side): passes only when both are
//     NaN or g == e (an inf of the same sign); the error is then 0, else inf.
// An output passes when its dtype and sizes are the expected ones and every
// element passes. Integer and bool outputs: atol is in their units (the
// exporter's default 0 makes them exact).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/bundled_test.h"

namespace tern {

// One output compared with its expected value.
struct OutputComparison {
  bool passed = true;
  double max_abs_error = 0;  // the most |g - e| (inf: a NaN or inf where the other side differs)
  double max_rel_error = 0;  // the most |g - e| / |e| over elements with e != 0
  // The element furthest beyond its tolerance (or, if all pass, nearest to
  // it), as a flat index in C order; -1 for an empty output.
  int64_t worst_index = -1;
  double worst_got = 0;
  double worst_expected = 0;
};

// `got` against `expected` by the rule above. `got` must have expected's
// dtype and numel (the caller checks; sizes are not looked at here).
OutputComparison compare_output(const Tensor& got, const BundledTensor& expected, double rtol, double atol);

// What Module::self_test() says of one expected output of one test.
struct SelfTestRecord {
  size_t test = 0;            // index among the file's bundled tests
  const char* method = "";    // the method it runs (points into the file)
  size_t output = 0;          // the output's index
  BundledTensor expected;     // dtype, sizes and bytes, from the file
  double rtol = 0;
  double atol = 0;
  // Ok: the output was compared (comparison says how). Otherwise why the
  // test did not run (NotFound: no such method; InvalidArgument: inputs or
  // outputs that do not fit the method; the error of execute()) or why this
  // output could not be compared (InvalidArgument: other dtype or sizes).
  Error error = Error::Ok;
  bool passed = false;
  OutputComparison comparison;
  // "" when passed; else one line, e.g. "max abs error 0.5 at element 3
  // (got 1.5, expected 1) > atol 1e-05 + rtol 0.0001 * |expected|".
  char message[320] = "";
};

// Called by Module::self_test() with each record, in test and output order;
// `context` is the caller's. The record lives until the call returns.
using SelfTestReport = void (*)(const SelfTestRecord& record, void* context);

}  // namespace tern
