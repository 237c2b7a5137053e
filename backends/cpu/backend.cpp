// The cpu backend on the runtime's backend interface (runtime/backend/backend.h):
// init checks and resolves the payload (program.cpp) with the microkernels
// of the running CPU (isa.cpp); execute runs it.
#include "backends/cpu/isa.h"
#include "backends/cpu/program.h"
#include "backends/cpu/register.h"
#include "runtime/backend/backend.h"

namespace tern {
namespace cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  Result<void*> init(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                     Span<EValue* const> outputs) const override {
    const Isa* isa = select_isa();
    if (isa == nullptr) return ctx.fail(Error::NotSupported, "TERN_CPU_ISA names an ISA this CPU or build lacks");
    const Qs8Kernels* qs8 = select_qs8_kernels();
    if (qs8 == nullptr) return ctx.fail(Error::NotSupported, "TERN_CPU_ISA names an ISA this CPU or build lacks");
    Result<CpuProgram*> p = load_cpu_program(ctx, payload, inputs, outputs, *isa, *qs8);
    if (!p.ok()) return p.error();
    return static_cast<void*>(*p);
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
