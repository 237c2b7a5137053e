// tern-run: load a .tern file, run it, time it.
//
//   tern-run model.tern [--input a.npy ...] [--iterations N] [--warmup N]
//            [--output out.npy ...] [--method NAME] [--load mmap|file]
//            [--threads N] [--profile] [--trace out.json] [--seed S] [--verbose]
//            [--dump-values DIR]
//   tern-run model.tern --self-test [--threads N] [--load mmap|file]
//
// Prints the outputs (shape, range, top-5 of classifier-like outputs), the
// load time, the first run (the first execute after load: its time, its
// ratio to the median of the timed runs, and load-to-first-output) and the
// latency (median and p90 over the timed iterations). Where getrusage is
// there (POSIX), load and first run also say how many page faults they took
// (minor: a page mapped from memory; major: read from disk).
// Without --input, inputs are random (floats uniform in [-1, 1), integers in
// [0, 4), bools random), with a fixed seed. --threads defaults to the number
// of physical cores. --trace writes the timed runs as a Chrome trace (one
// event per instruction and backend call, with node names) that Perfetto
// opens; --profile prints the time per op (kernels by ATen op, a backend's
// steps by kind, and its slowest steps by the nodes they cover) over 10 runs.
// --verbose prints, after the load, each method's backend subgraphs
// (delegates): the backend, the kernel sets it chose and the microkernel
// each role runs, by function name (the cpu backend: "float.igemm_main
// f32_igemm_ukernel_6x16__avx2"); --trace carries the same in one "delegate"
// event per delegate.
// --dump-values DIR runs the method once, right after the load, and writes
// every value it computes (each kernel's outs, each backend step's result)
// to DIR as .npy files with an index, DIR/values.tsv (tools/value_dump.h),
// for `tern debug` to compare with eager PyTorch; nothing is timed.
// --self-test runs the tests bundled in the file (tern.export(...,
// bundle=[...])) instead: one row per expected output (test, method, output,
// dtype and shape, max abs and rel error, tolerance, PASS or FAIL, and why a
// failure failed), then a summary. Exit status 0 when every output passed,
// 1 when one failed, 2 when the file has no bundled tests or does not load.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#define TERN_RUN_HAS_RUSAGE 1
#endif

#include "extension/module.h"
#include "backends/cpu/register.h"
#include "extension/npy.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"
#include "tools/chrome_trace.h"
#include "tools/value_dump.h"

namespace {

struct Options {
  const char* model = nullptr;
  std::vector<const char*> inputs;
  std::vector<const char*> outputs;
  const char* method = "forward";
  int iterations = 20;
  int warmup = 3;
  int threads = 0;  // 0: physical cores
  bool profile = false;
  bool verbose = false;
  bool self_test = false;
  const char* trace = nullptr;
  const char* dump_values = nullptr;
  bool mmap = true;
  unsigned seed = 0;
};

int usage(const char* msg) {
  if (msg) fprintf(stderr, "tern-run: %s\n", msg);
  fprintf(stderr,
          "usage: tern-run MODEL.tern [--input A.npy ...] [--iterations N] [--warmup N]\n"
          "                [--output OUT.npy ...] [--method NAME] [--load mmap|file]\n"
          "                [--threads N] [--profile] [--trace OUT.json] [--seed S] [--verbose]\n"
          "                [--dump-values DIR]\n"
          "       tern-run MODEL.tern --self-test [--threads N] [--load mmap|file]\n");
  return 2;
}

bool parse_int(const char* s, int* out) {
  char* end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 0 || v > 1000000000) return false;
  *out = static_cast<int>(v);
  return true;
}

int parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") return usage(nullptr) - 1;
    if (a == "--profile") { o->profile = true; continue; }
    if (a == "--verbose") { o->verbose = true; continue; }
    if (a == "--self-test") { o->self_test = true; continue; }
    if (a[0] == '-' && !has_value) return usage(("missing value after " + a).c_str());
    if (a == "--input") o->inputs.push_back(argv[++i]);
    else if (a == "--output") o->outputs.push_back(argv[++i]);
    else if (a == "--method") o->method = argv[++i];
    else if (a == "--trace") o->trace = argv[++i];
    else if (a == "--dump-values") o->dump_values = argv[++i];
    else if (a == "--iterations") { if (!parse_int(argv[++i], &o->iterations) || o->iterations < 1) return usage("--iterations takes a whole number >= 1"); }
    else if (a == "--warmup") { if (!parse_int(argv[++i], &o->warmup)) return usage("--warmup takes a whole number >= 0"); }
    else if (a == "--threads") { if (!parse_int(argv[++i], &o->threads) || o->threads < 1) return usage("--threads takes a whole number >= 1"); }
    else if (a == "--seed") { int s; if (!parse_int(argv[++i], &s)) return usage("--seed takes a whole number"); o->seed = s; }
    else if (a == "--load") {
      std::string m = argv[++i];
      if (m != "mmap" && m != "file") return usage("--load takes mmap or file");
      o->mmap = m == "mmap";
    } else if (a[0] == '-') return usage(("unknown option " + a).c_str());
    else if (o->model == nullptr) o->model = argv[i];
    else return usage(("unexpected argument " + a).c_str());
  }
  if (o->model == nullptr) return usage("no model file given");
  return 0;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string shape_str(const tern::Tensor& t) {
  std::string s = std::string(tern::scalar_type_name(t.dtype)) + " [";
  for (int i = 0; i < t.dim; ++i) s += (i ? ", " : "") + std::to_string(t.sizes[i]);
  return s + "]";
}

double element(const tern::Tensor& t, int64_t i) {
  switch (t.dtype) {
    case tern::ScalarType::Float32: return t.data_as<float>()[i];
    case tern::ScalarType::Float64: return t.data_as<double>()[i];
    case tern::ScalarType::Int64: return static_cast<double>(t.data_as<int64_t>()[i]);
    case tern::ScalarType::Int32: return t.data_as<int32_t>()[i];
    case tern::ScalarType::Bool:
    case tern::ScalarType::UInt8: return t.data_as<uint8_t>()[i];
    case tern::ScalarType::Int8: return t.data_as<int8_t>()[i];
    default: return NAN;
  }
}

void fill_random(tern::Tensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  std::uniform_int_distribution<int> ui(0, 3);
  for (int64_t i = 0; i < t.numel; ++i) {
    switch (t.dtype) {
      case tern::ScalarType::Float32: t.data_as<float>()[i] = uf(rng); break;
      case tern::ScalarType::Float64: t.data_as<double>()[i] = uf(rng); break;
      case tern::ScalarType::Int64: t.data_as<int64_t>()[i] = ui(rng); break;
      case tern::ScalarType::Int32: t.data_as<int32_t>()[i] = ui(rng); break;
      case tern::ScalarType::Bool: t.data_as<uint8_t>()[i] = ui(rng) & 1; break;
      default: memset(t.data, 0, t.nbytes()); return;
    }
  }
}

void print_output(size_t i, const tern::Tensor& t) {
  printf("  %zu: %s", i, shape_str(t).c_str());
  if (t.numel == 0) { printf("\n"); return; }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t k = 0; k < t.numel; ++k) {
    double v = element(t, k);
    lo = std::min(lo, v); hi = std::max(hi, v); sum += v;
  }
  printf("  min %.5g  max %.5g  mean %.5g\n", lo, hi, sum / t.numel);
  const int64_t classes = t.dim >= 1 ? t.sizes[t.dim - 1] : 0;
  if (classes == t.numel && classes > 1 && tern::scalar_type_is_floating(t.dtype)) {
    std::vector<int64_t> idx(classes);
    for (int64_t k = 0; k < classes; ++k) idx[k] = k;
    int64_t top = std::min<int64_t>(5, classes);
    std::partial_sort(idx.begin(), idx.begin() + top, idx.end(),
                      [&](int64_t a, int64_t b) { return element(t, a) > element(t, b); });
    printf("     top-%lld:", (long long)top);
    for (int64_t k = 0; k < top; ++k) printf(" %lld (%.4f)", (long long)idx[k], element(t, idx[k]));
    printf("\n");
  }
}

// Page faults of this process so far: minor and major (zeros without getrusage).
struct Faults {
  long minor = 0, major = 0;
};
Faults faults_now() {
  Faults f;
#ifdef TERN_RUN_HAS_RUSAGE
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) == 0) {
    f.minor = u.ru_minflt;
    f.major = u.ru_majflt;
  }
#endif
  return f;
}
std::string faults_since(const Faults& before) {
#ifdef TERN_RUN_HAS_RUSAGE
  const Faults now = faults_now();
  return " (" + std::to_string(now.minor - before.minor) + " minor, " + std::to_string(now.major - before.major) +
         " major page faults)";
#else
  (void)before;
  return "";
#endif
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(p * v.size())) - 1;
  return v[std::min(k, v.size() - 1)];
}

// Loads the model and its method; nullptr after printing why.
tern::Method* load(const Options& o, tern::Module& module, double* load_ms, std::string* load_faults) {
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    fprintf(stderr, "tern-run: %s\n", tern::last_error_message());
    return nullptr;
  }
  const Faults f0 = faults_now();
  auto t0 = std::chrono::steady_clock::now();
  const tern::Module::Options options{o.mmap ? tern::Module::LoadMode::Mmap : tern::Module::LoadMode::File, o.threads};
  // a refusal is printed once, below, with the runtime's reason (not also as a log line)
  tern::set_log_level(tern::LogLevel::Fatal);
  const tern::Error loaded = module.load(o.model, options);
  tern::Method* method = loaded == tern::Error::Ok ? module.method(o.method) : nullptr;
  tern::set_log_level(tern::LogLevel::Info);  // the default, for what runs next
  if (loaded != tern::Error::Ok) {
    fprintf(stderr, "tern-run: cannot load %s: %s\n", o.model, tern::last_error_message());
    return nullptr;
  }
  if (method == nullptr) {
    fprintf(stderr, "tern-run: cannot load method '%s': %s\n", o.method, tern::last_error_message());
    return nullptr;
  }
  *load_ms = ms_since(t0);
  *load_faults = faults_since(f0);
  printf("model: %s (%s), %d thread%s\n", o.model, module.program().producer(), method->threads(),
         method->threads() == 1 ? "" : "s");
  return method;
}

// --verbose: every method's delegates, each one's backend, the kernel sets
// it chose and its key=value details one a line (the cpu backend: each
// microkernel by set and role). Loads the methods tern-run does not run too.
int print_delegates(tern::Module& module) {
  const tern::Program& program = module.program();
  for (size_t m = 0; m < program.num_methods(); ++m) {
    const char* name = program.method_name(m);
    tern::set_log_level(tern::LogLevel::Fatal);  // a refusal is printed below, once
    const tern::Method* method = module.method(name);
    tern::set_log_level(tern::LogLevel::Info);
    if (method == nullptr) {
      fprintf(stderr, "tern-run: cannot load method '%s': %s\n", name, tern::last_error_message());
      return 1;
    }
    printf("method %s: %zu delegate%s\n", name, method->num_delegates(), method->num_delegates() == 1 ? "" : "s");
    for (size_t d = 0; d < method->num_delegates(); ++d) {
      printf("  delegate %zu: backend %s, %s\n", d, method->delegate_backend(d), method->delegate_description(d));
      const std::string said = std::string(" ") + method->delegate_description(d) + " ";
      for (const auto& kv : tern::delegate_detail_pairs(*method, d)) {
        if (said.find(" " + kv.first + "=" + kv.second + " ") != std::string::npos) continue;  // printed above
        printf("    %-22s %s\n", kv.first.c_str(), kv.second.c_str());
      }
    }
  }
  return 0;
}

// The inputs: from --input files, or random of the method's dtypes and sizes.
int make_inputs(const Options& o, const tern::Method& method, std::vector<tern::NpyArray>* arrays,
                std::vector<tern::Tensor>* inputs) {
  if (!o.inputs.empty() && o.inputs.size() != method.num_inputs()) {
    fprintf(stderr, "tern-run: method '%s' takes %zu inputs, %zu --input given\n", o.method,
            method.num_inputs(), o.inputs.size());
    return 2;
  }
  arrays->resize(method.num_inputs());
  std::mt19937 rng(o.seed);
  for (size_t i = 0; i < method.num_inputs(); ++i) {
    const tern::Tensor& want = method.input(i);
    tern::NpyArray& a = (*arrays)[i];
    if (!o.inputs.empty()) {
      if (tern::read_npy(o.inputs[i], &a) != tern::Error::Ok) {
        fprintf(stderr, "tern-run: %s\n", tern::last_error_message());
        return 1;
      }
    } else {
      a.dtype = want.dtype;
      a.sizes.assign(want.sizes, want.sizes + want.dim);
      a.data.resize(want.nbytes());
    }
    inputs->push_back(a.tensor());
    if (o.inputs.empty()) fill_random(inputs->back(), rng);
    printf("input %zu: %s%s\n", i, shape_str(inputs->back()).c_str(), o.inputs.empty() ? " (random)" : "");
  }
  return 0;
}

// Warm-up, then the timed runs (traced when --trace); their times in ms. The
// first run after load (warm-up or timed) in *first_ms, its page faults in
// *first_faults.
int time_runs(const Options& o, tern::Module& module, tern::Method& method, tern::Span<const tern::Tensor> in,
              std::vector<double>* times, double* first_ms, std::string* first_faults) {
  std::unique_ptr<tern::ChromeTrace> trace;
  for (int it = 0; it < o.warmup + o.iterations; ++it) {
    if (it == o.warmup && o.trace) trace = std::make_unique<tern::ChromeTrace>(method, o.iterations);
    const Faults f0 = faults_now();
    auto s = std::chrono::steady_clock::now();
    if (trace) trace->begin_run();
    auto r = module.run(o.method, in);
    if (trace) trace->end_run();
    if (!r.ok()) {
      fprintf(stderr, "tern-run: run failed: %s\n", tern::last_error_message());
      return 1;
    }
    const double ms = ms_since(s);
    if (it == 0) {
      *first_ms = ms;
      *first_faults = faults_since(f0);
    }
    if (it >= o.warmup) times->push_back(ms);
  }
  if (trace) {
    const std::string process = std::string("tern-run ") + o.model;
    if (!trace->write(o.trace, process.c_str())) {
      fprintf(stderr, "tern-run: cannot write %s: %s\n", o.trace, strerror(errno));
      return 1;
    }
    printf("wrote %zu trace events of %d runs to %s (open it in ui.perfetto.dev)\n", trace->num_events(),
           o.iterations, o.trace);
  }
  return 0;
}

// --profile: 10 more runs, timed op by op (and each backend's steps), summed.
int print_profile(const Options& o, tern::Module& module, tern::Method& method, tern::Span<const tern::Tensor> in) {
  constexpr int kRuns = 10;
  tern::ChromeTrace trace(method, kRuns);
  for (int i = 0; i < kRuns; ++i) {
    trace.begin_run();
    auto r = module.run(o.method, in);
    trace.end_run();
    if (!r.ok()) return 1;
  }
  trace.print_profile(stdout);
  return 0;
}

// --dump-values DIR: one run, every value written (tools/value_dump.h), and --output's files.
int dump_values(const Options& o, tern::Module& module, tern::Method& method, tern::Span<const tern::Tensor> in) {
  tern::ValueDump dump(method, o.dump_values);
  dump.attach();
  auto outs = module.run(o.method, in);
  dump.detach();
  const bool written = dump.finish();
  if (!outs.ok()) {
    fprintf(stderr, "tern-run: run failed: %s\n", tern::last_error_message());
    return 1;
  }
  if (!written) {
    fprintf(stderr, "tern-run: %s\n", dump.error().c_str());
    return 1;
  }
  for (size_t i = 0; i < o.outputs.size() && i < outs->size(); ++i) {
    if (tern::write_npy(o.outputs[i], (*outs)[i]) != tern::Error::Ok) {
      fprintf(stderr, "tern-run: %s\n", tern::last_error_message());
      return 1;
    }
  }
  printf("wrote %zu values of one run to %s (index: values.tsv)\n", dump.num_values(), o.dump_values);
  return 0;
}

void print_self_test_row(const tern::SelfTestRecord& r, void* failures) {
  const tern::TensorInfo& e = r.expected.info;
  std::string shape = std::string(tern::scalar_type_name(e.dtype)) + " [";
  for (int d = 0; d < e.dim(); ++d) shape += (d ? ", " : "") + std::to_string(e.sizes[d]);
  shape += "]";
  char tol[64];
  snprintf(tol, sizeof(tol), "%.3g+%.3g*|e|", r.atol, r.rtol);
  if (r.error != tern::Error::Ok) {
    printf("%4zu  %-12s %6zu  %-22s %12s %12s  %-20s FAIL\n", r.test, r.method, r.output, shape.c_str(), "-", "-", tol);
  } else {
    printf("%4zu  %-12s %6zu  %-22s %12.4g %12.4g  %-20s %s\n", r.test, r.method, r.output, shape.c_str(),
           r.comparison.max_abs_error, r.comparison.max_rel_error, tol, r.passed ? "PASS" : "FAIL");
  }
  if (!r.passed) {
    printf("      %s\n", r.message);
    ++*static_cast<size_t*>(failures);
  }
}

// --self-test: the file's bundled tests, a row per output; the exit status.
int run_self_tests(const Options& o) {
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    fprintf(stderr, "tern-run: %s\n", tern::last_error_message());
    return 2;
  }
  tern::Module module;
  const tern::Module::Options options{o.mmap ? tern::Module::LoadMode::Mmap : tern::Module::LoadMode::File, o.threads};
  tern::set_log_level(tern::LogLevel::Fatal);  // refusals and failures are printed here, once
  if (module.load(o.model, options) != tern::Error::Ok) {
    fprintf(stderr, "tern-run: cannot load %s: %s\n", o.model, tern::last_error_message());
    return 2;
  }
  const size_t tests = module.program().num_self_tests();
  if (tests == 0) {
    fprintf(stderr, "tern-run: %s has no bundled self-tests (export it with tern.export(..., bundle=[...]))\n",
            o.model);
    return 2;
  }
  printf("model: %s (%s): %zu bundled self-test%s\n", o.model, module.program().producer(), tests,
         tests == 1 ? "" : "s");
  printf("%4s  %-12s %6s  %-22s %12s %12s  %-20s %s\n", "test", "method", "output", "dtype [shape]", "max abs err",
         "max rel err", "tolerance", "result");
  size_t failures = 0, outputs = 0;
  for (size_t i = 0; i < tests; ++i) outputs += module.program().self_test(i).num_expected();
  const tern::Error e = module.self_test(print_self_test_row, &failures);
  if (e == tern::Error::Ok) {
    printf("self-test: PASS, all %zu outputs of %zu test%s within tolerance\n", outputs, tests, tests == 1 ? "" : "s");
    return 0;
  }
  printf("self-test: FAIL, %zu of %zu outputs (%s)\n", failures, outputs, tern::error_name(e));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_args(argc, argv, &o)) return rc < 0 ? 0 : rc;
  if (o.self_test) return run_self_tests(o);
  tern::Module module;
  double load_ms = 0, first_ms = 0;
  std::string load_faults, first_faults;
  tern::Method* method = load(o, module, &load_ms, &load_faults);
  if (method == nullptr) return 1;
  if (o.verbose) {
    if (int rc = print_delegates(module)) return rc;
  }
  std::vector<tern::NpyArray> arrays;
  std::vector<tern::Tensor> inputs;
  if (int rc = make_inputs(o, *method, &arrays, &inputs)) return rc;
  tern::Span<const tern::Tensor> in(inputs.data(), inputs.size());
  if (o.dump_values) return dump_values(o, module, *method, in);
  std::vector<double> times;
  if (int rc = time_runs(o, module, *method, in, &times, &first_ms, &first_faults)) return rc;

  auto outs = module.run(o.method, in);
  if (!outs.ok()) return 1;
  printf("outputs:\n");
  for (size_t i = 0; i < outs->size(); ++i) print_output(i, (*outs)[i]);
  for (size_t i = 0; i < o.outputs.size() && i < outs->size(); ++i) {
    if (tern::write_npy(o.outputs[i], (*outs)[i]) != tern::Error::Ok) {
      fprintf(stderr, "tern-run: %s\n", tern::last_error_message());
      return 1;
    }
    printf("wrote output %zu to %s\n", i, o.outputs[i]);
  }
  const double median = percentile(times, 0.5);
  printf("load: %.2f ms%s\n", load_ms, load_faults.c_str());
  printf("first run: %.3f ms%s, %.2fx the median; load to first output %.2f ms\n", first_ms, first_faults.c_str(),
         first_ms / median, load_ms + first_ms);
  printf("latency over %d runs (%d warm-up): median %.3f ms, p90 %.3f ms\n", o.iterations, o.warmup, median,
         percentile(times, 0.9));
  if (o.profile) return print_profile(o, module, *method, in);
  return 0;
}
