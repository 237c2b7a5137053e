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

// Each ISA's float kernels, chosen by name in one place (the XNNPACK
// configs' way): scalar's first, then what the ISA overrides, so that a
// kernel an ISA lacks stays scalar's. Constant-initialized: no code runs
// before main.
constexpr Isa scalar_isa() {
  Isa k{};
  k.name = "scalar";
  k.igemm_main = {f32_igemm_ukernel__scalar_main, 4, 16};
  k.igemm_tail = {f32_igemm_ukernel__scalar_tail, 4, 16};
  k.igemm_row = {f32_igemm_ukernel__scalar_row, 1, 64};
  k.dwconv = f32_dwconv_ukernel__scalar;
  k.dwconv_rows = f32_dwconv_rows_ukernel__scalar;
  k.vact = f32_vact_ukernel__scalar;
  k.pool = f32_pool_ukernel__scalar;
  k.winograd_in = f32_winograd_in_ukernel__scalar;
  k.winograd_out = f32_winograd_out_ukernel__scalar;
  return k;
}
constexpr Isa kScalar = scalar_isa();

#if defined(__x86_64__)
constexpr Isa avx2_isa() {
  Isa k = scalar_isa();
  k.name = "avx2";
  k.igemm_main = {f32_igemm_ukernel__avx2_main, 6, 16};
  k.igemm_tail = {f32_igemm_ukernel__avx2_tail, 6, 16};
  k.igemm_row = {f32_igemm_ukernel__avx2_row, 1, 64};
  k.dwconv = f32_dwconv_ukernel__avx2;
  k.dwconv_rows = f32_dwconv_rows_ukernel__avx2;
  k.vact = f32_vact_ukernel__avx2;
  k.pool = f32_pool_ukernel__avx2;
  k.winograd_in = f32_winograd_in_ukernel__avx2;
  k.winograd_out = f32_winograd_out_ukernel__avx2;
  return k;
}
constexpr Isa avx512_isa() {
  Isa k = scalar_isa();
  k.name = "avx512";
  k.igemm_main = {f32_igemm_ukernel__avx512_main, 8, 32};
  k.igemm_tail = {f32_igemm_ukernel__avx512_tail, 8, 16};
  k.igemm_row = {f32_igemm_ukernel__avx512_row, 1, 64};
  k.dwconv = f32_dwconv_ukernel__avx512;
  k.dwconv_rows = f32_dwconv_rows_ukernel__avx512;
  k.vact = f32_vact_ukernel__avx512;
  k.pool = f32_pool_ukernel__avx512;
  k.winograd_in = f32_winograd_in_ukernel__avx512;
  k.winograd_out = f32_winograd_out_ukernel__avx512;
  return k;
}
constexpr Isa kAvx2 = avx2_isa();
constexpr Isa kAvx512 = avx512_isa();
#endif
#if defined(__aarch64__)
constexpr Isa neon_isa() {
  Isa k = scalar_isa();
  k.name = "neon";
  k.igemm_main = {f32_igemm_ukernel__neon_main, 6, 16};
  k.igemm_tail = {f32_igemm_ukernel__neon_tail, 6, 16};
  k.igemm_row = {f32_igemm_ukernel__neon_row, 1, 64};
  k.dwconv = f32_dwconv_ukernel__neon;
  k.dwconv_rows = f32_dwconv_rows_ukernel__neon;
  k.vact = f32_vact_ukernel__neon;
  k.pool = f32_pool_ukernel__neon;
  k.winograd_in = f32_winograd_in_ukernel__neon;
  k.winograd_out = f32_winograd_out_ukernel__neon;
  return k;
}
constexpr Isa kNeon = neon_isa();
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

// Each ISA's int8 kernels, by name as the float ones: scalar's first, then
// the ISA's own.
constexpr Qs8Kernels qs8_scalar() {
  Qs8Kernels k{};
  k.name = "scalar";
  k.mr = 4;
  k.panels = 1;
  k.igemm[0] = qs8_igemm_ukernel__scalar_4x16;
  k.igemm_f32[0] = qs8_igemm_f32_ukernel__scalar_4x16;
  k.dwconv = qs8_dwconv_ukernel__scalar;
  k.quantize = qs8_quantize_ukernel__scalar;
  k.binary = qs8_binary_ukernel__scalar;
  k.minmax = f32_minmax_ukernel__scalar;
  k.pool = qs8_pool_ukernel__scalar;
  return k;
}
constexpr Qs8Kernels kQs8Scalar = qs8_scalar();
#if defined(__x86_64__)
constexpr Qs8Kernels qs8_avx2() {
  Qs8Kernels k = qs8_scalar();
  k.name = "avx2";
  k.mr = 3;
  k.panels = 1;
  k.igemm[0] = qs8_igemm_ukernel__avx2_3x16;
  k.igemm_f32[0] = qs8_igemm_f32_ukernel__avx2_3x16;
  k.dwconv = qs8_dwconv_ukernel__avx2;
  k.quantize = qs8_quantize_ukernel__avx2;
  k.binary = qs8_binary_ukernel__avx2;
  k.minmax = f32_minmax_ukernel__avx2;
  k.pool = qs8_pool_ukernel__avx2;
  return k;
}
// The AVX-512 sets: VNNI's 6-row GEMMs over up to 4 panels; AMX's tiles of
// 16 rows, bracketed by begin and end (the tile configuration).
constexpr Qs8Kernels qs8_vnni() {
  Qs8Kernels k = qs8_avx2();  // its pool kernel stays avx2's
  k.name = "avx512vnni";
  k.mr = 6;
  k.panels = 4;
  k.igemm[0] = qs8_igemm_ukernel__avx512vnni_6x16;
  k.igemm[1] = qs8_igemm_ukernel__avx512vnni_6x32;
  k.igemm[2] = qs8_igemm_ukernel__avx512vnni_6x48;
  k.igemm[3] = qs8_igemm_ukernel__avx512vnni_6x64;
  k.igemm_f32[0] = qs8_igemm_f32_ukernel__avx512vnni_6x16;
  k.igemm_f32[1] = qs8_igemm_f32_ukernel__avx512vnni_6x32;
  k.igemm_f32[2] = qs8_igemm_f32_ukernel__avx512vnni_6x48;
  k.igemm_f32[3] = qs8_igemm_f32_ukernel__avx512vnni_6x64;
  k.dwconv = qs8_dwconv_ukernel__avx512vnni;
  k.quantize = qs8_quantize_ukernel__avx512;
  k.binary = qs8_binary_ukernel__avx512;
  k.minmax = f32_minmax_ukernel__avx512;
  k.unsigned_a = true;
  return k;
}
constexpr Qs8Kernels qs8_amx() {
  Qs8Kernels k = qs8_vnni();  // its dwconv, quantize, binary, minmax and pool stay VNNI's
  k.name = "amx";
  k.mr = 16;
  k.igemm[0] = qs8_igemm_ukernel__amx_16x16;
  k.igemm[1] = qs8_igemm_ukernel__amx_16x32;
  k.igemm[2] = qs8_igemm_ukernel__amx_16x48;
  k.igemm[3] = qs8_igemm_ukernel__amx_16x64;
  k.igemm_f32[0] = qs8_igemm_f32_ukernel__amx_16x16;
  k.igemm_f32[1] = qs8_igemm_f32_ukernel__amx_16x32;
  k.igemm_f32[2] = qs8_igemm_f32_ukernel__amx_16x48;
  k.igemm_f32[3] = qs8_igemm_f32_ukernel__amx_16x64;
  k.unsigned_a = false;
  k.begin = qs8_amx_begin;
  k.end = qs8_amx_end;
  return k;
}
constexpr Qs8Kernels kQs8Avx2 = qs8_avx2();
constexpr Qs8Kernels kQs8Vnni = qs8_vnni();
constexpr Qs8Kernels kQs8Amx = qs8_amx();
#endif
#if defined(__aarch64__)
constexpr Qs8Kernels qs8_neondot() {
  Qs8Kernels k = qs8_scalar();
  k.name = "neondot";
  k.mr = 4;
  k.panels = 1;
  k.igemm[0] = qs8_igemm_ukernel__neondot_4x16;
  k.igemm_f32[0] = qs8_igemm_f32_ukernel__neondot_4x16;
  k.dwconv = qs8_dwconv_ukernel__neondot;
  k.quantize = qs8_quantize_ukernel__neon;
  k.binary = qs8_binary_ukernel__neon;
  k.minmax = f32_minmax_ukernel__neon;
  k.pool = qs8_pool_ukernel__neon;
  return k;
}
constexpr Qs8Kernels kQs8NeonDot = qs8_neondot();
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
