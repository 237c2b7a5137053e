// The cpu backend on the runtime's backend interface (runtime/backend/backend.h):
// init checks and resolves the payload (program.cpp) with the microkernels
// of the running CPU (isa.cpp); execute runs it.
#include <cstdio>

#include "backends/cpu/isa.h"
#include "backends/cpu/program.h"
#include "backends/cpu/register.h"
#include "backends/cpu/ukernels/qs8.h"
#include "runtime/backend/backend.h"

namespace tern {
namespace cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  Result<void*> init(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                     Span<EValue* const> outputs) const override {
    const KernelChoice kernels = choose_kernels();  // TERN_CPU_ISA's, else the CPU's best
    if (kernels.isa == nullptr) return ctx.fail(Error::NotSupported, "%s", kernels.refusal);
    Result<CpuProgram*> p = load_cpu_program(ctx, payload, inputs, outputs, *kernels.isa, *kernels.qs8);
    if (!p.ok()) return p.error();
    snprintf((*p)->kernels, sizeof((*p)->kernels), "float=%s int8=%s", kernels.isa->name, kernels.qs8->name);
    return static_cast<void*>(*p);
  }

  // The kernel sets init chose: "float=avx2 int8=avx2".
  const char* describe(const void* handle) const override {
    return static_cast<const CpuProgram*>(handle)->kernels;
  }

  Error execute(RunContext& ctx, void* handle, EValue* const*) const override {
    run_cpu_program(*static_cast<const CpuProgram*>(handle), ctx);
    return Error::Ok;
  }
};

}  // namespace
}  // namespace cpu

Error register_cpu_backend() {
  static const cpu::CpuBackend backend;
  static bool registered = false;
  if (registered) return Error::Ok;
  Error e = register_backend(&backend);
  registered = e == Error::Ok;
  return e;
}

}  // namespace tern
