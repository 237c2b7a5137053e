// The one place that maps CPU features to microkernels (STYLE.md: no #if
// ladders in kernel bodies).
#include "backends/cpu/isa.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/ukernels/qs8.h"
#include "runtime/core/cpu_info.h"
#include "runtime/core/log.h"

namespace tern {
namespace cpu {
namespace {

const Isa kScalar = {"scalar",
                     {f32_igemm_ukernel__scalar_main, 4, 16},
                     {f32_igemm_ukernel__scalar_tail, 4, 16},
                     {f32_igemm_ukernel__scalar_row, 1, 64},
                     f32_dwconv_ukernel__scalar,
                     f32_dwconv_rows_ukernel__scalar, f32_vact_ukernel__scalar, f32_pool_ukernel__scalar,
                     f32_winograd_in_ukernel__scalar, f32_winograd_out_ukernel__scalar};

#if defined(__x86_64__)
const Isa kAvx2 = {"avx2",
                   {f32_igemm_ukernel__avx2_main, 6, 16},
                   {f32_igemm_ukernel__avx2_tail, 6, 16},
                   {f32_igemm_ukernel__avx2_row, 1, 64},
                   f32_dwconv_ukernel__avx2,
                     f32_dwconv_rows_ukernel__avx2, f32_vact_ukernel__avx2, f32_pool_ukernel__avx2,
                     f32_winograd_in_ukernel__avx2, f32_winograd_out_ukernel__avx2};
const Isa kAvx512 = {"avx512",
                     {f32_igemm_ukernel__avx512_main, 8, 32},
                     {f32_igemm_ukernel__avx512_tail, 8, 16},
                     {f32_igemm_ukernel__avx512_row, 1, 64},
                     f32_dwconv_ukernel__avx512,
                     f32_dwconv_rows_ukernel__avx512, f32_vact_ukernel__avx512, f32_pool_ukernel__avx512,
                     f32_winograd_in_ukernel__avx512, f32_winograd_out_ukernel__avx512};
#endif
#if defined(__aarch64__)
const Isa kNeon = {"neon",
                   {f32_igemm_ukernel__neon_main, 6, 16},
                   {f32_igemm_ukernel__neon_tail, 6, 16},
                   {f32_igemm_ukernel__neon_row, 1, 64},
                   f32_dwconv_ukernel__neon,
                     f32_dwconv_rows_ukernel__neon, f32_vact_ukernel__neon, f32_pool_ukernel__neon,
                     f32_winograd_in_ukernel__neon, f32_winograd_out_ukernel__neon};
#endif


// What each kernel set asks of the CPU: the architecture it belongs to
// (nullptr: any) and the CpuFeatures flag (nullptr: none); `needs` says it in words.
struct Requirement {
  const char* set;
  const char* arch;
  bool CpuFeatures::*feature;
  const char* needs;
};
const Requirement kRequirements[] = {
    {"scalar", nullptr, nullptr, "nothing"},
    {"avx2", "x86-64", &CpuFeatures::avx2_fma, "AVX2 and FMA"},
    {"avx512", "x86-64", &CpuFeatures::avx512f, "AVX-512F, AVX2 and FMA"},
    {"avx512vnni", "x86-64", &CpuFeatures::avx512_vnni, "AVX-512F, VNNI, BW and VL"},
    {"amx", "x86-64", &CpuFeatures::amx_int8,
     "AMX-TILE, AMX-INT8, AVX-512 VNNI, BW and VL, and the OS's permission to use the tiles"},
    {"neon", "aarch64", &CpuFeatures::neon, "Advanced SIMD"},
    {"neondot", "aarch64", &CpuFeatures::neon_dot, "the dot product (SDOT)"},
};

#if defined(__x86_64__)
const char* const kArch = "x86-64";
#elif defined(__aarch64__)
const char* const kArch = "aarch64";
#else
const char* const kArch = "neither x86-64 nor aarch64";
#endif

const Requirement& requirement(const char* set) {
  for (const Requirement& r : kRequirements) {
    if (strcmp(r.set, set) == 0) return r;
  }
  TERN_ABORT("cpu backend: kernel set '%s' has no requirement", set);  // a table above lacks a row
}

bool cpu_runs(const char* set, const CpuFeatures& f) {
  const Requirement& r = requirement(set);
  if (r.arch != nullptr && strcmp(r.arch, kArch) != 0) return false;
  return r.feature == nullptr || f.*r.feature;
}

// Every float kernel set this build has, best first. Compiling one out
// (its #if) takes it out of here: TERN_CPU_ISA naming it is then refused as
// "this build has no ... kernels", not as a CPU that lacks it.
const Isa* const kBuiltIsas[] = {
#if defined(__x86_64__)
    &kAvx512, &kAvx2,
#endif
#if defined(__aarch64__)
    &kNeon,
#endif
    &kScalar};

const Isa* built_isa(const char* name) {
  for (const Isa* isa : kBuiltIsas) {
    if (strcmp(isa->name, name) == 0) return isa;
  }
  return nullptr;
}

}  // namespace

int supported_isas(const Isa** out, int max) {
  const CpuFeatures& f = cpu_features();
  int n = 0;
  for (const Isa* isa : kBuiltIsas) {
    if (n < max && cpu_runs(isa->name, f)) out[n++] = isa;
  }
  return n;
}

const Isa* find_isa(const char* name) {
  const Isa* isas[4];
  const int n = supported_isas(isas, 4);
  for (int i = 0; i < n; ++i) {
    if (strcmp(isas[i]->name, name) == 0) return isas[i];
  }
  return nullptr;
}

const Isa* select_isa() {
  const KernelChoice c = choose_kernels();
  if (c.isa == nullptr) TERN_LOG_ERROR("%s", c.refusal);
  return c.isa;
}

// ---- int8 kernel sets (ukernels/qs8.h)

namespace {

const Qs8Kernels kQs8Scalar = {"scalar", 4, 1, {qs8_igemm_ukernel__scalar_4x16}, {qs8_igemm_f32_ukernel__scalar_4x16},
                               false, qs8_dwconv_ukernel__scalar, qs8_quantize_ukernel__scalar,
                               qs8_binary_ukernel__scalar, f32_minmax_ukernel__scalar, qs8_pool_ukernel__scalar,
                               nullptr, nullptr};
#if defined(__x86_64__)
const Qs8Kernels kQs8Avx2 = {"avx2", 3, 1, {qs8_igemm_ukernel__avx2_3x16}, {qs8_igemm_f32_ukernel__avx2_3x16}, false,
                             qs8_dwconv_ukernel__avx2, qs8_quantize_ukernel__avx2, qs8_binary_ukernel__avx2,
                             f32_minmax_ukernel__avx2, qs8_pool_ukernel__avx2, nullptr, nullptr};
const Qs8Kernels kQs8Vnni = {"avx512vnni", 6, 4,
                             {qs8_igemm_ukernel__avx512vnni_6x16, qs8_igemm_ukernel__avx512vnni_6x32,
                              qs8_igemm_ukernel__avx512vnni_6x48, qs8_igemm_ukernel__avx512vnni_6x64},
                             {qs8_igemm_f32_ukernel__avx512vnni_6x16, qs8_igemm_f32_ukernel__avx512vnni_6x32,
                              qs8_igemm_f32_ukernel__avx512vnni_6x48, qs8_igemm_f32_ukernel__avx512vnni_6x64},
                             true, qs8_dwconv_ukernel__avx512vnni, qs8_quantize_ukernel__avx512,
                             qs8_binary_ukernel__avx512, f32_minmax_ukernel__avx512,
                             qs8_pool_ukernel__avx2, nullptr, nullptr};
const Qs8Kernels kQs8Amx = {"amx", 16, 4,
                            {qs8_igemm_ukernel__amx_16x16, qs8_igemm_ukernel__amx_16x32, qs8_igemm_ukernel__amx_16x48,
                             qs8_igemm_ukernel__amx_16x64},
                            {qs8_igemm_f32_ukernel__amx_16x16, qs8_igemm_f32_ukernel__amx_16x32,
                             qs8_igemm_f32_ukernel__amx_16x48, qs8_igemm_f32_ukernel__amx_16x64},
                            false, qs8_dwconv_ukernel__avx512vnni, qs8_quantize_ukernel__avx512,
                            qs8_binary_ukernel__avx512, f32_minmax_ukernel__avx512, qs8_pool_ukernel__avx2,
                            qs8_amx_begin, qs8_amx_end};
#endif
#if defined(__aarch64__)
const Qs8Kernels kQs8NeonDot = {"neondot", 4, 1, {qs8_igemm_ukernel__neondot_4x16},
                                {qs8_igemm_f32_ukernel__neondot_4x16}, false, qs8_dwconv_ukernel__neondot,
                                qs8_quantize_ukernel__neon, qs8_binary_ukernel__neon, f32_minmax_ukernel__neon,
                                qs8_pool_ukernel__neon, nullptr, nullptr};
#endif

// Every int8 kernel set this build has, best first (as kBuiltIsas).
const Qs8Kernels* const kBuiltQs8[] = {
#if defined(__x86_64__)
    &kQs8Amx, &kQs8Vnni, &kQs8Avx2,
#endif
#if defined(__aarch64__)
    &kQs8NeonDot,
#endif
    &kQs8Scalar};

const Qs8Kernels* built_qs8(const char* name) {
  for (const Qs8Kernels* k : kBuiltQs8) {
    if (strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

// What TERN_CPU_ISA may name: its float kernel set, its int8 one, and the
// int8 set taken on a CPU that has the float ISA but not the int8 one's
// extension (avx512 without VNNI: avx2; neon without the dot product:
// scalar), or nullptr. amx: avx512's floats with AMX's int8 GEMMs.
struct Forced {
  const char* name;
  const char* isa;
  const char* qs8;
  const char* qs8_fallback;
};
const Forced kForced[] = {
    {"scalar", "scalar", "scalar", nullptr}, {"avx2", "avx2", "avx2", nullptr},
    {"avx512", "avx512", "avx512vnni", "avx2"}, {"amx", "avx512", "amx", nullptr},
    {"neon", "neon", "neondot", "scalar"},
};

// A refusal: "TERN_CPU_ISA=<forced>: " and the reason.
KernelChoice refuse(const char* forced, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
KernelChoice refuse(const char* forced, const char* fmt, ...) {
  KernelChoice c;
  int n = snprintf(c.refusal, sizeof(c.refusal), "TERN_CPU_ISA=%.32s: ", forced);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(c.refusal)) return c;
  va_list args;
  va_start(args, fmt);
  vsnprintf(c.refusal + n, sizeof(c.refusal) - static_cast<size_t>(n), fmt, args);
  va_end(args);
  return c;
}

}  // namespace

int supported_qs8_kernels(const Qs8Kernels** out, int max) {
  const CpuFeatures& f = cpu_features();
  int n = 0;
  for (const Qs8Kernels* k : kBuiltQs8) {
    if (n < max && cpu_runs(k->name, f)) out[n++] = k;
  }
  return n;
}

KernelChoice choose_kernels(const char* forced) {
  const CpuFeatures& f = cpu_features();
  KernelChoice c;
  if (forced == nullptr || forced[0] == '\0') {
    supported_isas(&c.isa, 1);
    supported_qs8_kernels(&c.qs8, 1);
    return c;
  }
  const Forced* want = nullptr;
  for (const Forced& w : kForced) {
    if (strcmp(w.name, forced) == 0) want = &w;
  }
  if (want == nullptr) return refuse(forced, "no such ISA (scalar, avx2, avx512, amx, neon)");
  // Another architecture's: what the CPU lacks, not the build.
  const Requirement& r = requirement(want->qs8);
  if (r.arch != nullptr && strcmp(r.arch, kArch) != 0) {
    return refuse(forced, "this CPU lacks it (an %s ISA; this CPU is %s)", r.arch, kArch);
  }
  // This architecture's: each of its sets must be in the build, whatever
  // the CPU (a build that lost some fails where it is tested, on any CPU).
  const char* compiled_out = built_isa(want->isa) == nullptr                                 ? want->isa
                             : built_qs8(want->qs8) == nullptr                               ? want->qs8
                             : want->qs8_fallback && built_qs8(want->qs8_fallback) == nullptr ? want->qs8_fallback
                                                                                              : nullptr;
  if (compiled_out != nullptr) return refuse(forced, "this build has no %s kernels (compiled out)", compiled_out);
  // amx before avx512: the int8 set that has no fallback is the one asked for.
  const char* lacking = nullptr;
  if (want->qs8_fallback == nullptr && !cpu_runs(want->qs8, f)) lacking = want->qs8;
  else if (!cpu_runs(want->isa, f)) lacking = want->isa;
  if (lacking != nullptr) return refuse(forced, "this CPU lacks it (%s needs %s)", lacking, requirement(lacking).needs);
  c.isa = built_isa(want->isa);
  c.qs8 = built_qs8(cpu_runs(want->qs8, f) ? want->qs8 : want->qs8_fallback);
  if (!cpu_runs(c.qs8->name, f)) {  // the fallback: implied by the float ISA's features
    return refuse(forced, "this CPU lacks it (%s needs %s)", c.qs8->name, requirement(c.qs8->name).needs);
  }
  return c;
}

KernelChoice choose_kernels() { return choose_kernels(getenv("TERN_CPU_ISA")); }

const Qs8Kernels* select_qs8_kernels() {
  const KernelChoice c = choose_kernels();
  if (c.qs8 == nullptr) TERN_LOG_ERROR("%s", c.refusal);
  return c.qs8;
}

}  // namespace cpu
}  // namespace tern
