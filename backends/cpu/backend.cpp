// The cpu backend on the runtime's backend interface (runtime/backend/backend.h):
// init checks and resolves the payload (program.cpp) with the microkernels
// of the running CPU (isa.cpp); execute runs it.
#include <cstdarg>
#include <cstdio>

#include "backends/cpu/isa.h"
#include "backends/cpu/program.h"
#include "backends/cpu/register.h"
#include "backends/cpu/ukernels/qb.h"
#include "backends/cpu/ukernels/qs8.h"
#include "runtime/backend/backend.h"

namespace tern {
namespace cpu {
namespace {

// Text appended into out[0, size) as snprintf writes it; length counts all of
// it, what did not fit too.
struct Text {
  char* out;
  size_t size;
  size_t length = 0;

  void add(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, fmt);
    const size_t at = length < size ? length : size;
    const int n = vsnprintf(size > at ? out + at : nullptr, size - at, fmt, args);
    va_end(args);
    if (n > 0) length += size_t(n);
  }
};

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

  // The sets, then each of their microkernels by set and role:
  // "float=avx2 int8=avx2 float.igemm_main=f32_igemm_ukernel_6x16__avx2 ...
  // int8.igemm[0]=qs8_igemm_ukernel_3x16__avx2 ... qb.gemm[0]=qb_q4_0_gemm_ukernel_4x1__avx2 ...".
  size_t describe_details(const void* handle, char* out, size_t size) const override {
    const CpuProgram& p = *static_cast<const CpuProgram*>(handle);
    Text t{out, size};
    t.add("%s", p.kernels);
    for (const KernelName& k : Span<const KernelName>(p.isa->names.at, size_t(p.isa->names.count))) {
      t.add(" float.%s=%s", k.role, k.function);
    }
    for (const KernelName& k : Span<const KernelName>(p.qs8->names.at, size_t(p.qs8->names.count))) {
      t.add(" int8.%s=%s", k.role, k.function);
    }
    const QbKernels& qb = qb_kernels_for(p.qs8->name);  // BlockLinear's, which go with the int8 set
    for (const KernelName& k : Span<const KernelName>(qb.names.at, size_t(qb.names.count))) {
      t.add(" qb.%s=%s", k.role, k.function);
    }
    return t.length;
  }

  Error reshape(PrepareContext& ctx, void* handle, Span<EValue* const> inputs,
                Span<EValue* const> outputs) const override {
    return reshape_cpu_program(ctx, *static_cast<CpuProgram*>(handle), inputs, outputs);
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
