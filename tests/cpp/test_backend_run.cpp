// test_backend_run: runs a .tern file with the portable kernels and the
// "tern_test" backend (test_backend.h) registered, for the Python tests of
// the backend path (tests/python/test_backend.py), which cannot load a
// backend that is not shipped into the bindings.
//
//   test_backend_run MODEL.tern OUT_PREFIX [--threads N] IN0.npy IN1.npy ...
//
// Writes OUT_PREFIX<i>.npy for each output; exit status 1 with the runtime's
// message on any failure.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "extension/npy.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"
#include "test_backend.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL.tern OUT_PREFIX [--threads N] IN.npy ...\n", argv[0]);
    return 2;
  }
  int threads = 1, first_input = 3;
  if (argc > 4 && strcmp(argv[3], "--threads") == 0) threads = atoi(argv[4]), first_input = 5;
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) return 1;
  tern::test::register_test_backend();
  tern::Module module;
  if (module.load(argv[1], tern::Module::Options{tern::Module::LoadMode::Mmap, threads}) != tern::Error::Ok) {
    fprintf(stderr, "%s\n", tern::last_error_message());
    return 1;
  }
  std::vector<tern::NpyArray> arrays(argc - first_input);
  std::vector<tern::Tensor> inputs;
  for (int i = first_input; i < argc; ++i) {
    if (tern::read_npy(argv[i], &arrays[i - first_input]) != tern::Error::Ok) {
      fprintf(stderr, "%s\n", tern::last_error_message());
      return 1;
    }
    inputs.push_back(arrays[i - first_input].tensor());
  }
  auto outs = module.forward({inputs.data(), inputs.size()});
  if (!outs.ok()) {
    fprintf(stderr, "%s\n", tern::last_error_message());
    return 1;
  }
  for (size_t i = 0; i < outs->size(); ++i) {
    const std::string path = std::string(argv[2]) + std::to_string(i) + ".npy";
    if (tern::write_npy(path.c_str(), (*outs)[i]) != tern::Error::Ok) return 1;
  }
  printf("ran %zu instructions, %zu delegates\n", module.method()->num_instructions(),
         module.program().method_meta("forward")->num_delegates());
  return 0;
}
