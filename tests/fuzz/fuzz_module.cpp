// Harness (e): the entry points the Python bindings use (python/src/
// bindings.cpp: tern::Module::load_buffer, method(), self_test(),
// Method::set_input with a Tensor or with bytes, execute, output), given inputs that a Python
// caller can pass: any dtype, 0 to 10 dims, zero-size dims, huge dims, the
// wrong number of inputs. The tail (fuzz_util.h) describes them:
//
//   u8 count; then per input: u8 dtype (0..9 valid, others invalid),
//   u8 ndim (mod 11), per dim u8 kind + u64 value, then the data.
//
// Each tensor is consistent (its buffer holds what its sizes say), as a NumPy
// array is; the runtime must refuse what does not match the method.
#include <cstring>
#include <vector>

#include "extension/module.h"
#include "fuzz_util.h"

using namespace tern;

namespace {

constexpr uint64_t kMaxInputBytes = uint64_t(4) << 20;

struct Input {
  std::vector<uint8_t> data;
  ScalarType dtype;
  std::vector<int64_t> sizes;
};

bool read_input(fuzz::TailReader& tail, const Method& m, size_t i, Input* in) {
  const uint8_t dtype = tail.u8();
  in->dtype = static_cast<ScalarType>(dtype % 12);  // 10, 11: not a dtype
  const int ndim = tail.u8() % 11;
  in->sizes.assign(static_cast<size_t>(ndim), 0);
  for (int d = 0; d < ndim; ++d) {
    const uint8_t kind = tail.u8();
    const uint64_t v = tail.u64();
    if (kind < 160 && i < m.num_inputs() && d < m.input(i).dim) {
      in->sizes[d] = m.input(i).sizes[d];  // what the method expects
    } else if (kind < 224) {
      in->sizes[d] = static_cast<int64_t>(v % 17);
    } else {
      in->sizes[d] = static_cast<int64_t>(v >> 1);  // huge, kept only if another dim is 0
    }
  }
  // NumPy refuses shapes whose nonzero sizes multiply past int64, zero-size or not.
  uint64_t nonzero = 1;
  bool zero = false;
  for (int64_t s : in->sizes) {
    if (s == 0) {
      zero = true;
    } else if (__builtin_mul_overflow(nonzero, static_cast<uint64_t>(s), &nonzero) || nonzero > INT64_MAX) {
      return false;
    }
  }
  const uint64_t numel = zero ? 0 : nonzero;
  const uint64_t elem = in->dtype <= ScalarType::Bool ? scalar_type_size(in->dtype) : 1;
  if (numel > kMaxInputBytes / elem) return false;  // NumPy could not hold it here either
  in->data.resize(static_cast<size_t>(numel * elem));
  tail.fill(in->data.data(), in->data.size());
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput input(data, size);
  // An application first checks what the file will ask for.
  if (input.program() == nullptr) return 0;
  {
    fuzz::FuzzMemory probe;
    if (input.program()->method("forward") != nullptr && !probe.plan(*input.program(), "forward")) {
      fuzz::record_skip("planned memory over the harness's cap");
      return 0;
    }
  }
  Module module;
  Module::Options options{Module::LoadMode::Mmap, 1, fuzz::kMaxLoopInstructions};
  if (fuzz::record("Module::load_buffer", module.load_buffer(input.file().data(), input.file().size(), options)) !=
      Error::Ok) {
    return 0;
  }
  Method* m = module.method("forward");
  if (m == nullptr) {
    fuzz::record_skip("no forward method");
    return 0;
  }
  // The bundled self-tests (Program.self_tests), as tern-run --self-test runs
  // them: only those of "forward", whose planned memory was probed above.
  bool forward_only = true;
  for (size_t i = 0; i < module.program().num_self_tests(); ++i) {
    forward_only = forward_only && strcmp(module.program().self_test(i).method(), "forward") == 0;
  }
  if (module.program().num_self_tests() != 0 && forward_only) {
    (void)fuzz::record("Module::self_test", module.self_test());  // a failed test refuses the model
  }
  fuzz::TailReader& tail = input.tail();
  static volatile uint64_t sink = 0;
  for (int run = 0; run < 2 && !tail.empty(); ++run) {
    const size_t count = tail.u8() % 5;
    std::vector<Input> inputs(count);
    bool ok = true;
    for (size_t i = 0; i < count && ok; ++i) ok = read_input(tail, *m, i, &inputs[i]);
    if (!ok) {
      fuzz::record_skip("an input NumPy could not hold");
      continue;
    }
    if (tail.u8() & 1) {
      // The C++ API: Module::forward with make_tensor.
      std::vector<Tensor> tensors;
      for (Input& in : inputs) {
        tensors.push_back(make_tensor(in.data.data(), in.dtype, in.sizes.data(), static_cast<int>(in.sizes.size())));
      }
      Result<Span<const Tensor>> out = module.forward(Span<const Tensor>(tensors.data(), tensors.size()));
      if (fuzz::record("Module::forward", out.error()) == Error::Ok) fuzz::record_completed();
      if (out.ok()) sink = sink + fuzz::touch_outputs(*m);
      continue;
    }
    // What bindings.cpp PyModule::run does with arrays runtime.py has let through.
    if (count != m->num_inputs()) {
      fuzz::record_skip("an input count the bindings refuse");
      continue;
    }
    Error e = Error::Ok;
    for (size_t i = 0; i < count && e == Error::Ok; ++i) {
      if (m->input_is_dynamic(i)) {
        Tensor t = m->input(i);
        if (inputs[i].sizes.size() != static_cast<size_t>(t.dim)) {
          fuzz::record_skip("a rank the bindings refuse");
          break;
        }
        t.numel = 1;
        for (int d = 0; d < t.dim; ++d) {
          t.sizes[d] = inputs[i].sizes[static_cast<size_t>(d)];
          t.numel *= t.sizes[d];
        }
        if (inputs[i].data.size() != t.nbytes()) {  // as the bindings refuse it
          fuzz::record_skip("a byte count the bindings refuse");
          break;
        }
        t.data = inputs[i].data.data();
        e = fuzz::record("set_input", m->set_input(i, t));
      } else {
        e = fuzz::record("set_input", m->set_input(i, inputs[i].data.data(), inputs[i].data.size()));
      }
    }
    if (e == Error::Ok && fuzz::record("execute", m->execute()) == Error::Ok) {
      fuzz::record_completed();
      sink = sink + fuzz::touch_outputs(*m);
    }
  }
  return 0;
}
