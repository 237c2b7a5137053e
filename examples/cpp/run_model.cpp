// The smallest C++ program that runs a .tern file: the README's example.
//
//   build/examples/run_model model.tern
//
// Built by the project, or on its own against an installed Tern
// (CMakeLists.txt here).
//
// Feeds zeros of the right shape to every input of "forward" and prints the
// first values of each output.
#include <cstdio>
#include <vector>

#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tern\n", argv[0]);
    return 2;
  }
  // Loading binds every instruction to a registered kernel, and the
  // application decides which kernel libraries it links and registers: here
  // the portable (reference) ones, for every op the exporter emits.
  if (tern::register_portable_kernels() != tern::Error::Ok) {
    fprintf(stderr, "%s\n", tern::last_error_message());
    return 1;
  }
  tern::Module module;
  if (module.load(argv[1]) != tern::Error::Ok) {  // mmap + verify + bind kernels
    fprintf(stderr, "%s\n", tern::last_error_message());
    return 1;
  }
  tern::Method* forward = module.method("forward");
  if (forward == nullptr) {
    fprintf(stderr, "%s\n", tern::last_error_message());
    return 1;
  }

  // One zero-filled buffer per input, shaped as the method expects.
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<tern::Tensor> inputs;
  for (size_t i = 0; i < forward->num_inputs(); ++i) {
    const tern::Tensor& want = forward->input(i);
    buffers.emplace_back(want.nbytes());
    inputs.push_back(tern::make_tensor(buffers.back().data(), want.dtype, want.sizes, want.dim));
  }

  auto outputs = module.forward({inputs.data(), inputs.size()});  // no heap use from here on
  if (!outputs.ok()) {
    fprintf(stderr, "%s\n", tern::last_error_message());
    return 1;
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const tern::Tensor& y = (*outputs)[i];  // valid until the next run
    printf("output %zu: %s, %lld elements", i, tern::scalar_type_name(y.dtype), (long long)y.numel);
    if (y.dtype == tern::ScalarType::Float32) {
      for (int64_t k = 0; k < y.numel && k < 4; ++k) printf(" %g", y.data_as<float>()[k]);
    }
    printf("\n");
  }
  return 0;
}
