// Python bindings of the runtime (module tern._runtime). The friendly API is
// python/tern/runtime.py; this file only moves bytes and turns Errors into
// exceptions carrying the runtime's own message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/llm/generator.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/backend/backend.h"
#include "runtime/core/cpu_info.h"
#include "runtime/core/log.h"
#include "runtime/kernel/registry.h"

namespace nb = nanobind;

namespace {

[[noreturn]] void raise(tern::Error e, const std::string& what) {
  std::string msg = what + ": " + tern::error_name(e);
  const char* detail = tern::last_error_message();
  if (detail && detail[0]) msg += ": " + std::string(detail);
  throw nb::value_error(msg.c_str());
}

using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

nb::dlpack::dtype dlpack_dtype(tern::ScalarType t) {
  using nb::dlpack::dtype_code;
  switch (t) {
    case tern::ScalarType::Float32: return {uint8_t(dtype_code::Float), 32, 1};
    case tern::ScalarType::Float64: return {uint8_t(dtype_code::Float), 64, 1};
    case tern::ScalarType::Float16: return {uint8_t(dtype_code::Float), 16, 1};
    // NumPy has no bfloat16: its bits go out as uint16 (runtime.py widens them to float32).
    case tern::ScalarType::BFloat16: return {uint8_t(dtype_code::UInt), 16, 1};
    case tern::ScalarType::Int8: return {uint8_t(dtype_code::Int), 8, 1};
    case tern::ScalarType::UInt8: return {uint8_t(dtype_code::UInt), 8, 1};
    case tern::ScalarType::Int16: return {uint8_t(dtype_code::Int), 16, 1};
    case tern::ScalarType::Int32: return {uint8_t(dtype_code::Int), 32, 1};
    case tern::ScalarType::Int64: return {uint8_t(dtype_code::Int), 64, 1};
    case tern::ScalarType::Bool: return {uint8_t(dtype_code::Bool), 8, 1};
  }
  return {uint8_t(dtype_code::UInt), 8, 1};
}

// A new NumPy array holding a copy of t.
nb::object to_numpy(const tern::Tensor& t) {
  size_t n = t.nbytes();
  uint8_t* buf = new uint8_t[n == 0 ? 1 : n];
  if (n) memcpy(buf, t.data, n);
  nb::capsule owner(buf, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  size_t shape[tern::kMaxDims];
  for (int d = 0; d < t.dim; ++d) shape[d] = static_cast<size_t>(t.sizes[d]);
  nb::ndarray<nb::numpy> arr(buf, static_cast<size_t>(t.dim), shape, owner, nullptr, dlpack_dtype(t.dtype));
  return arr.cast();
}

// (dtype, sizes, per dim (dynamic, Dim name, min, max)); sizes of dynamic
// dims (format 1.3) are their upper bounds.
using DimRange = std::tuple<bool, std::string, int64_t, int64_t>;
using Spec = std::tuple<std::string, std::vector<int64_t>, std::vector<DimRange>>;

Spec spec_of(const tern::TensorInfo& t, const tern::MethodMeta* meta = nullptr, size_t input = 0) {
  std::vector<DimRange> dims;
  for (int d = 0; meta != nullptr && d < t.dim(); ++d) {
    tern::DimRange r = *meta->input_dim_range(input, d);
    dims.emplace_back(r.dynamic, r.symbol, r.min, r.max);
  }
  return {tern::scalar_type_name(t.dtype), std::vector<int64_t>(t.sizes.begin(), t.sizes.end()), dims};
}

// One SelfTestRecord (runtime.py: SelfTestResult, in this order): test,
// method, output, passed, error name, max abs error, max rel error, worst
// element's index, got and expected values, rtol, atol, dtype, shape, message.
using SelfTestTuple = std::tuple<size_t, std::string, size_t, bool, std::string, double, double, int64_t, double,
                                 double, double, double, std::string, std::vector<int64_t>, std::string>;

// Runs module's bundled self-tests (Module::self_test) into tuples. Raises
// ValueError when there are none or a test could not report (no records).
std::vector<SelfTestTuple> run_self_tests(tern::Module& module) {
  struct Out {
    std::vector<SelfTestTuple> records;
    bool out_of_memory = false;
  } out;
  // Module is built without exceptions: none may unwind through it.
  auto add = [](const tern::SelfTestRecord& r, void* context) {
    Out& o = *static_cast<Out*>(context);
    try {
      const tern::OutputComparison& c = r.comparison;
      o.records.emplace_back(r.test, r.method, r.output, r.passed, tern::error_name(r.error), c.max_abs_error,
                             c.max_rel_error, c.worst_index, c.worst_got, c.worst_expected, r.rtol, r.atol,
                             tern::scalar_type_name(r.expected.info.dtype),
                             std::vector<int64_t>(r.expected.info.sizes.begin(), r.expected.info.sizes.end()),
                             r.message);
    } catch (...) {
      o.out_of_memory = true;
    }
  };
  tern::clear_last_error();
  tern::Error e;
  {
    nb::gil_scoped_release release;
    e = module.self_test(add, &out);
  }
  if (out.out_of_memory) throw std::bad_alloc();
  if (e != tern::Error::Ok && out.records.empty()) raise(e, "self-test");
  return out.records;
}

// A 64-byte aligned copy of `data` (Module::load_buffer needs the alignment).
class AlignedCopy {
 public:
  explicit AlignedCopy(const nb::bytes& data)
      : p_(static_cast<uint8_t*>(aligned_alloc(64, (data.size() + 63) / 64 * 64 + 64)), free) {
    if (p_ == nullptr) throw std::bad_alloc();
    memcpy(p_.get(), data.c_str(), data.size());
  }
  uint8_t* get() const { return p_.get(); }

 private:
  std::unique_ptr<uint8_t, void (*)(void*)> p_;
};

// A Module over a 64-byte aligned copy of `data`, as tern.load would load
// these bytes; ValueError "refused: <why>" if the runtime refuses them.
struct BytesModule {
  AlignedCopy copy;
  tern::Module module;  // destroyed before the bytes it reads

  BytesModule(const nb::bytes& data, int threads) : copy(data) {
    tern::clear_last_error();
    const tern::Error e = module.load_buffer(copy.get(), data.size(), {tern::Module::LoadMode::Mmap, threads});
    if (e != tern::Error::Ok) raise(e, "refused");
  }
};

class PyModule {
 public:
  PyModule(const std::string& path, bool mmap, int threads, uint64_t max_loop_instructions) {
    tern::clear_last_error();
    if (threads < 0) throw nb::value_error("threads must be >= 1 (or 0 for the physical cores)");
    const tern::Module::Options options{mmap ? tern::Module::LoadMode::Mmap : tern::Module::LoadMode::File, threads,
                                        max_loop_instructions};
    tern::Error e = module_.load(path.c_str(), options);
    if (e != tern::Error::Ok) raise(e, "cannot load '" + path + "'");
  }

  std::vector<std::string> method_names() const {
    std::vector<std::string> names;
    for (size_t i = 0; i < module_.program().num_methods(); ++i) names.push_back(module_.program().method_name(i));
    return names;
  }

  tern::Method& method(const std::string& name) {
    tern::clear_last_error();
    tern::Method* m = module_.method(name.c_str());
    if (m == nullptr) raise(tern::Error::NotFound, "cannot load method '" + name + "'");
    return *m;
  }

  int threads(const std::string& name) { return method(name).threads(); }

  // What the file says of a method, without loading it.
  tern::MethodMeta meta(const std::string& name) {
    tern::clear_last_error();
    tern::Result<tern::MethodMeta> meta = module_.program().method_meta(name.c_str());
    if (!meta.ok()) raise(meta.error(), "no method '" + name + "'");
    return *meta;
  }

  std::vector<Spec> input_specs(const std::string& name) {
    tern::MethodMeta m = meta(name);
    std::vector<Spec> specs;
    for (size_t i = 0; i < m.num_inputs(); ++i) specs.push_back(spec_of(*m.input(i), &m, i));
    return specs;
  }

  std::vector<Spec> output_specs(const std::string& name) {
    tern::MethodMeta m = meta(name);
    std::vector<Spec> specs;
    for (size_t i = 0; i < m.num_outputs(); ++i) specs.push_back(spec_of(*m.output(i)));
    return specs;
  }

  // The backend of each delegate (format 1.1), in order.
  std::vector<std::string> backends(const std::string& name) {
    tern::MethodMeta m = meta(name);
    std::vector<std::string> names;
    for (size_t i = 0; i < m.num_delegates(); ++i) names.emplace_back(m.delegate_backend(i));
    return names;
  }

  // Each delegate of the loaded method: (backend, what it chose at load,
  // Backend::describe: "float=avx2 int8=avx2").
  std::vector<std::tuple<std::string, std::string>> delegate_descriptions(const std::string& name) {
    tern::Method& m = method(name);
    std::vector<std::tuple<std::string, std::string>> out;
    for (size_t i = 0; i < m.num_delegates(); ++i) out.emplace_back(m.delegate_backend(i), m.delegate_description(i));
    return out;
  }

  std::vector<uint64_t> arena_sizes(const std::string& name) {
    tern::MethodMeta m = meta(name);
    std::vector<uint64_t> sizes;
    for (size_t i = 0; i < m.num_arenas(); ++i) sizes.push_back(*m.arena_size(i));
    return sizes;
  }

  // Program.metadata, in the file's (bytewise) key order: (key, copy of the value).
  std::vector<std::tuple<nb::bytes, nb::bytes>> metadata() const {
    std::vector<std::tuple<nb::bytes, nb::bytes>> out;
    const tern::Program& p = module_.program();
    for (size_t i = 0; i < p.num_metadata(); ++i) {
      const char* key = p.metadata_key(i);
      const tern::Span<const uint8_t> value = p.metadata_value(i);
      out.emplace_back(nb::bytes(key, strlen(key)), nb::bytes(value.data(), value.size()));
    }
    return out;
  }

  // The tensors the method keeps between runs (format 1.2): (name, copy).
  std::vector<std::tuple<std::string, nb::object>> state(const std::string& name) {
    tern::Method& m = method(name);
    std::vector<std::tuple<std::string, nb::object>> out;
    for (size_t i = 0; i < m.num_state(); ++i) out.emplace_back(m.state_name(i), to_numpy(m.state(i)));
    return out;
  }

  void reset_state(const std::string& name) { method(name).reset_state(); }

  std::vector<SelfTestTuple> self_test() { return run_self_tests(module_); }

  // inputs: C-contiguous arrays whose dtype and shape runtime.py has checked;
  // set_input checks the byte count again. Outputs are copied into new arrays
  // (the runtime's outputs live in planned memory that the next run reuses).
  std::vector<nb::object> run(const std::string& name, const std::vector<InArray>& inputs) {
    tern::Method& m = method(name);
    if (inputs.size() != m.num_inputs()) {
      raise(tern::Error::InvalidArgument, "method '" + name + "' takes " + std::to_string(m.num_inputs()) +
                                              " inputs, got " + std::to_string(inputs.size()));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      tern::Error e;
      if (m.input_is_dynamic(i)) {  // its shape may differ from the last run's (format 1.3)
        tern::Tensor t = m.input(i);
        if (inputs[i].ndim() != static_cast<size_t>(t.dim)) raise(tern::Error::InvalidArgument, "input " + std::to_string(i));
        for (int d = 0; d < t.dim; ++d) t.sizes[d] = static_cast<int64_t>(inputs[i].shape(static_cast<size_t>(d)));
        t.numel = 1;
        for (int d = 0; d < t.dim; ++d) t.numel *= t.sizes[d];
        // The method reads numel elements of its own dtype: an array of another
        // itemsize (runtime.py refuses it; a direct call of this binding does
        // not) must not make it read past the array.
        if (inputs[i].nbytes() != t.nbytes()) {
          raise(tern::Error::InvalidArgument, "input " + std::to_string(i) + ": an array of " +
                                                  std::to_string(inputs[i].nbytes()) + " bytes where " +
                                                  std::string(tern::scalar_type_name(t.dtype)) + " takes " +
                                                  std::to_string(t.nbytes()));
        }
        t.data = const_cast<void*>(inputs[i].data());
        e = m.set_input(i, t);
      } else {
        e = m.set_input(i, inputs[i].data(), inputs[i].nbytes());
      }
      if (e != tern::Error::Ok) raise(e, "input " + std::to_string(i));
    }
    tern::Error e;
    {
      nb::gil_scoped_release release;
      e = m.execute();
    }
    if (e != tern::Error::Ok) raise(e, "method '" + name + "' failed");
    std::vector<nb::object> outs;
    for (size_t i = 0; i < m.num_outputs(); ++i) outs.push_back(to_numpy(m.output(i)));
    return outs;
  }

 private:
  tern::Module module_;
};

// Every op some registered kernel library has (the portable library always).
std::vector<std::string> registered_ops() {
  std::vector<std::string> names;
  for (const tern::KernelLibrary& lib : tern::kernel_libraries()) {
    for (const tern::OpKernel& k : lib.kernels) names.emplace_back(k.name);
  }
  return names;
}

// (op, the dtype names of its OpKernel::dtypes, empty for any) of every
// kernel of every library, in registration order.
std::vector<std::tuple<std::string, std::vector<std::string>>> registered_op_dtypes() {
  std::vector<std::tuple<std::string, std::vector<std::string>>> out;
  for (const tern::KernelLibrary& lib : tern::kernel_libraries()) {
    for (const tern::OpKernel& k : lib.kernels) {
      std::vector<std::string> names;
      for (int t = 0; t < tern::kNumScalarTypes; ++t) {
        if (k.dtypes & (uint32_t(1) << t)) names.emplace_back(tern::scalar_type_name(static_cast<tern::ScalarType>(t)));
      }
      out.emplace_back(k.name, std::move(names));
    }
  }
  return out;
}

// (kind, family) of every op kind the cpu backend runs, in the order of
// cpu.fbs's OpKind union: backends/cpu/ops.def itself, through the same
// X-macro as the backend's tables. The exporter claims only nodes whose
// family's ops are all here (python/tern/backends/cpu/__init__.py).
std::vector<std::tuple<std::string, std::string>> cpu_op_kinds() {
  return {
#define CPU_OP(Kind, family) {#Kind, #family},
#include "backends/cpu/ops.def"
#undef CPU_OP
  };
}


// tern::llm::Generator for tern.llm.load (python/tern/llm/generation.py):
// token ids and bytes in and out; the text and the options are Python's.
class PyGenerator {
 public:
  PyGenerator(const std::string& path, int threads) {
    tern::clear_last_error();
    if (threads < 0) throw nb::value_error("threads must be >= 1 (or 0 for the physical cores)");
    tern::Error e = g_.load(path.c_str(), {threads});
    if (e != tern::Error::Ok) raise(e, "cannot load the language model '" + path + "'");
  }

  std::vector<int32_t> tokenize(const std::string& text, bool special) {
    return ok(g_.tokenizer().encode(text, special), "tokenize");
  }

  nb::bytes token_bytes(int32_t id) {
    std::string_view b = ok(g_.tokenizer().token_bytes(id), "detokenize");
    return nb::bytes(b.data(), b.size());
  }

  std::vector<int32_t> text_prompt(const std::string& text) { return ok(g_.text_prompt(text), "the prompt"); }

  std::vector<int32_t> chat_prompt(const std::vector<std::pair<std::string, std::string>>& messages) {
    std::vector<tern::llm::ChatMessage> m;
    for (const auto& [role, content] : messages) m.push_back({role, content});
    return ok(g_.chat_prompt(m), "the chat prompt");
  }

  std::vector<int32_t> chat_turn(const std::string& content, bool after_stop) {
    return ok(g_.chat_turn(content, after_stop), "the chat turn");
  }

  // The file's defaults: (temperature, top_k, top_p, repeat_penalty, repeat_last_n).
  std::tuple<float, int, float, float, int> defaults() const {
    tern::llm::GenerateOptions o = g_.defaults();
    return {o.sampling.temperature, o.sampling.top_k, o.sampling.top_p, o.repeat_penalty, o.repeat_last_n};
  }

  void start(const std::vector<int32_t>& prompt, int max_tokens, float temperature, int top_k, float top_p,
             uint64_t seed, float repeat_penalty, int repeat_last_n, bool stop) {
    tern::llm::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling = {temperature, top_k, top_p, seed};
    o.repeat_penalty = repeat_penalty;
    o.repeat_last_n = repeat_last_n;
    o.stop_at_stop_tokens = stop;
    tern::clear_last_error();
    tern::Error e;
    {
      nb::gil_scoped_release release;
      e = g_.start({prompt.data(), prompt.size()}, o);
    }
    if (e != tern::Error::Ok) raise(e, "the prompt");
  }

  // (more, id): the next token, or (False, stop token or -1) at the end.
  std::pair<bool, int32_t> next() {
    int32_t id = -1;
    tern::Error e = tern::Error::Ok;
    bool more = false;
    {
      nb::gil_scoped_release release;
      tern::clear_last_error();
      tern::Result<bool> r = g_.next(&id);
      if (r.ok()) {
        more = *r;
      } else {
        e = r.error();
      }
    }
    if (e != tern::Error::Ok) raise(e, "generation");
    return {more, id};
  }

  nb::dict stats() const {
    const tern::llm::GenerateStats& s = g_.stats();
    nb::dict d;
    d["prompt_tokens"] = s.prompt_tokens;
    d["generated"] = s.generated;
    d["load_ms"] = s.load_ms;
    d["prefill_ms"] = s.prefill_ms;
    d["decode_ms"] = s.decode_ms;
    d["decode_steps"] = s.decode_steps;
    d["first_token_ms"] = s.first_token_ms;
    d["prefill_tokens_per_s"] = s.prefill_tokens_per_s();
    d["decode_tokens_per_s"] = s.decode_tokens_per_s();
    return d;
  }

  void reset() { g_.reset(); }
  int position() { return g_.runner().position(); }
  int max_context() { return g_.runner().max_context(); }
  int vocab() { return g_.runner().vocab(); }
  bool has_chat() const { return g_.config().has_chat; }

 private:
  template <typename T>
  T ok(tern::Result<T>&& r, const char* what) {
    if (!r.ok()) raise(r.error(), what);
    return std::move(*r);
  }

  tern::llm::Generator g_;
};

}  // namespace

NB_MODULE(_runtime, m) {
  m.doc() = "Tern runtime bindings (use tern.load)";
  tern::set_log_level(tern::LogLevel::Fatal);  // errors reach Python as exceptions instead
  // The bindings' defaults: the portable kernels and the cpu backend.
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    throw nb::import_error(tern::last_error_message());
  }
  nb::class_<PyModule>(m, "Module")
      .def(nb::init<const std::string&, bool, int, uint64_t>(), nb::arg("path"), nb::arg("mmap") = true,
           nb::arg("threads") = 0, nb::arg("max_loop_instructions") = tern::MethodOptions{}.max_loop_instructions)
      .def("threads", &PyModule::threads, nb::arg("method"))
      .def("method_names", &PyModule::method_names)
      .def("input_specs", &PyModule::input_specs, nb::arg("method"))
      .def("output_specs", &PyModule::output_specs, nb::arg("method"))
      .def("backends", &PyModule::backends, nb::arg("method"))
      .def("delegate_descriptions", &PyModule::delegate_descriptions, nb::arg("method"))
      .def("arena_sizes", &PyModule::arena_sizes, nb::arg("method"))
      .def("metadata", &PyModule::metadata)
      .def("state", &PyModule::state, nb::arg("method"))
      .def("reset_state", &PyModule::reset_state, nb::arg("method"))
      .def("self_test", &PyModule::self_test)
      .def("run", &PyModule::run, nb::arg("method"), nb::arg("inputs"));
  nb::class_<PyGenerator>(m, "Generator")
      .def(nb::init<const std::string&, int>(), nb::arg("path"), nb::arg("threads") = 0)
      .def("tokenize", &PyGenerator::tokenize, nb::arg("text"), nb::arg("special") = true)
      .def("token_bytes", &PyGenerator::token_bytes, nb::arg("id"))
      .def("text_prompt", &PyGenerator::text_prompt, nb::arg("text"))
      .def("chat_prompt", &PyGenerator::chat_prompt, nb::arg("messages"))
      .def("chat_turn", &PyGenerator::chat_turn, nb::arg("content"), nb::arg("after_stop"))
      .def("defaults", &PyGenerator::defaults)
      .def("start", &PyGenerator::start, nb::arg("prompt"), nb::arg("max_tokens"), nb::arg("temperature"),
           nb::arg("top_k"), nb::arg("top_p"), nb::arg("seed"), nb::arg("repeat_penalty"), nb::arg("repeat_last_n"),
           nb::arg("stop"))
      .def("next", &PyGenerator::next)
      .def("stats", &PyGenerator::stats)
      .def("reset", &PyGenerator::reset)
      .def("position", &PyGenerator::position)
      .def("max_context", &PyGenerator::max_context)
      .def("vocab", &PyGenerator::vocab)
      .def("has_chat", &PyGenerator::has_chat);
  m.def("check_program", [](nb::bytes data) {
    // what tern.load would do with these bytes (verify, then load every
    // method: each kernel's and backend's own checks), on one thread
    BytesModule b(data, 1);
    for (size_t i = 0; i < b.module.program().num_methods(); ++i) {
      const char* name = b.module.program().method_name(i);
      if (b.module.method(name) == nullptr) raise(tern::Error::InvalidProgram, std::string("refused: method ") + name);
    }
  }, nb::arg("data"), "Raises ValueError with the runtime's reason if it would refuse to load these bytes.");
  m.def("self_test_program", [](nb::bytes data) {
    BytesModule b(data, 0);
    return run_self_tests(b.module);
  }, nb::arg("data"), "The bundled self-tests of these bytes, run (as tern.load(path).self_test()).");
  m.def("registered_ops", &registered_ops, "Names of the operators this runtime has kernels for.");
  m.def("registered_op_dtypes", &registered_op_dtypes,
        "(op, dtype names of its first tensor argument; empty: any) for every registered kernel.");
  m.def("cpu_op_kinds", &cpu_op_kinds,
        "(kind, family) of each op kind of the cpu backend (backends/cpu/ops.def), in cpu.fbs's OpKind order.");
  m.def("physical_core_count", &tern::physical_core_count, "The default thread count.");
  m.def("registered_backends", [] {
    std::vector<std::string> names;
    for (const tern::Backend* b : tern::registered_backends()) names.emplace_back(b->name());
    return names;
  }, "Names of the backends this runtime has.");
}
