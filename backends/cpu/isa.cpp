// The one place that maps CPU features to microkernels (STYLE.md: no #if
// ladders in kernel bodies).
#include "backends/cpu/isa.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/ukernels/qb.h"
#include "backends/cpu/ukernels/qs8.h"
#include "runtime/core/cpu_info.h"
#include "runtime/core/log.h"

namespace tern {
namespace cpu {
namespace {

// Sets kernel set k's `field` to the function `fn` and records fn's name
// under the field's (kernel_names.h): the one way this file assigns a
// kernel, so that the names describe_details reports are the functions that run.
#define TERN_CPU_USE(k, field, fn) \
  do {                             \
    (k).field = (fn);              \
    (k).names.set(#field, #fn);    \
  } while (0)
// The same for a float igemm field and its tile, mr rows x nr columns.
#define TERN_CPU_USE_IGEMM(k, field, fn, mr, nr) \
  do {                                           \
    (k).field = IgemmConfig{(fn), (mr), (nr)};   \
    (k).names.set(#field, #fn);                  \
  } while (0)

// Each ISA's float kernels, chosen by name in one place (the XNNPACK
// configs' way): scalar's first, then what the ISA overrides, so that a
// kernel an ISA lacks stays scalar's. Constant-initialized: no code runs
// before main.
constexpr Isa scalar_isa() {
  Isa k{};
  k.name = "scalar";
  TERN_CPU_USE_IGEMM(k, igemm_main, f32_igemm_ukernel_4x16__scalar, 4, 16);
  TERN_CPU_USE_IGEMM(k, igemm_tail, f32_igemm_ukernel_4x16__scalar, 4, 16);
  TERN_CPU_USE_IGEMM(k, igemm_row, f32_igemm_ukernel_1x64__scalar, 1, 64);
  TERN_CPU_USE(k, dwconv, f32_dwconv_ukernel__scalar);
  TERN_CPU_USE(k, dwconv_rows, f32_dwconv_rows_ukernel__scalar);
  TERN_CPU_USE(k, vact, f32_vact_ukernel__scalar);
  TERN_CPU_USE(k, pool, f32_pool_ukernel__scalar);
  TERN_CPU_USE(k, winograd_in, f32_winograd_in_ukernel_4x4__scalar);
  TERN_CPU_USE(k, winograd_out, f32_winograd_out_ukernel_2x2__scalar);
  TERN_CPU_USE(k, attn_dots, f32_attn_dots_ukernel__scalar);
  TERN_CPU_USE(k, attn_wsum, f32_attn_wsum_ukernel__scalar);
  return k;
}
constexpr Isa kScalar = scalar_isa();

#if defined(__x86_64__)
constexpr Isa avx2_isa() {
  Isa k = scalar_isa();
  k.name = "avx2";
  TERN_CPU_USE_IGEMM(k, igemm_main, f32_igemm_ukernel_6x16__avx2, 6, 16);
  TERN_CPU_USE_IGEMM(k, igemm_tail, f32_igemm_ukernel_6x16__avx2, 6, 16);
  TERN_CPU_USE_IGEMM(k, igemm_row, f32_igemm_ukernel_1x64__avx2, 1, 64);
  TERN_CPU_USE(k, dwconv, f32_dwconv_ukernel__avx2);
  TERN_CPU_USE(k, dwconv_rows, f32_dwconv_rows_ukernel__avx2);
  TERN_CPU_USE(k, vact, f32_vact_ukernel__avx2);
  TERN_CPU_USE(k, pool, f32_pool_ukernel__avx2);
  TERN_CPU_USE(k, winograd_in, f32_winograd_in_ukernel_4x4__avx2);
  TERN_CPU_USE(k, winograd_out, f32_winograd_out_ukernel_2x2__avx2);
  TERN_CPU_USE(k, attn_dots, f32_attn_dots_ukernel__avx2);
  TERN_CPU_USE(k, attn_wsum, f32_attn_wsum_ukernel__avx2);
  return k;
}
constexpr Isa avx512_isa() {
  Isa k = scalar_isa();
  k.name = "avx512";
  TERN_CPU_USE_IGEMM(k, igemm_main, f32_igemm_ukernel_8x32__avx512, 8, 32);
  TERN_CPU_USE_IGEMM(k, igemm_tail, f32_igemm_ukernel_8x16__avx512, 8, 16);
  TERN_CPU_USE_IGEMM(k, igemm_row, f32_igemm_ukernel_1x64__avx512, 1, 64);
  TERN_CPU_USE(k, dwconv, f32_dwconv_ukernel__avx512);
  TERN_CPU_USE(k, dwconv_rows, f32_dwconv_rows_ukernel__avx512);
  TERN_CPU_USE(k, vact, f32_vact_ukernel__avx512);
  TERN_CPU_USE(k, pool, f32_pool_ukernel__avx512);
  TERN_CPU_USE(k, winograd_in, f32_winograd_in_ukernel_4x4__avx512);
  TERN_CPU_USE(k, winograd_out, f32_winograd_out_ukernel_2x2__avx512);
  TERN_CPU_USE(k, attn_dots, f32_attn_dots_ukernel__avx512);
  TERN_CPU_USE(k, attn_wsum, f32_attn_wsum_ukernel__avx512);
  return k;
}
constexpr Isa kAvx2 = avx2_isa();
constexpr Isa kAvx512 = avx512_isa();
#endif
#if defined(__aarch64__)
constexpr Isa neon_isa() {
  Isa k = scalar_isa();
  k.name = "neon";
  TERN_CPU_USE_IGEMM(k, igemm_main, f32_igemm_ukernel_6x16__neon, 6, 16);
  TERN_CPU_USE_IGEMM(k, igemm_tail, f32_igemm_ukernel_6x16__neon, 6, 16);
  TERN_CPU_USE_IGEMM(k, igemm_row, f32_igemm_ukernel_1x64__neon, 1, 64);
  TERN_CPU_USE(k, dwconv, f32_dwconv_ukernel__neon);
  TERN_CPU_USE(k, dwconv_rows, f32_dwconv_rows_ukernel__neon);
  TERN_CPU_USE(k, vact, f32_vact_ukernel__neon);
  TERN_CPU_USE(k, pool, f32_pool_ukernel__neon);
  TERN_CPU_USE(k, winograd_in, f32_winograd_in_ukernel_4x4__neon);
  TERN_CPU_USE(k, winograd_out, f32_winograd_out_ukernel_2x2__neon);
  TERN_CPU_USE(k, attn_dots, f32_attn_dots_ukernel__neon);
  TERN_CPU_USE(k, attn_wsum, f32_attn_wsum_ukernel__neon);
  return k;
}
constexpr Isa kNeon = neon_isa();
#endif

// The tile in a kernel's name ("_6x16__") is the one its config says.
constexpr bool named_tile(const char* name, int mr, int nr) {
  if (name == nullptr) return false;
  const char* end = name;
  while (*end != '\0' && !(end[0] == '_' && end[1] == '_')) ++end;  // the "__" before the ISA
  const char* p = end;
  while (p > name && p[-1] != '_') --p;  // the tile's start
  int a = 0, b = 0;
  while (p < end && *p >= '0' && *p <= '9') a = 10 * a + (*p++ - '0');
  if (p == end || *p++ != 'x') return false;
  while (p < end && *p >= '0' && *p <= '9') b = 10 * b + (*p++ - '0');
  return p == end && a == mr && b == nr;
}
constexpr bool tiles_named(const Isa& k) {
  return named_tile(k.names.of("igemm_main"), k.igemm_main.mr, k.igemm_main.nr) &&
         named_tile(k.names.of("igemm_tail"), k.igemm_tail.mr, k.igemm_tail.nr) &&
         named_tile(k.names.of("igemm_row"), k.igemm_row.mr, k.igemm_row.nr);
}

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
constexpr const Isa* kBuiltIsas[] = {
#if defined(__x86_64__)
    &kAvx512, &kAvx2,
#endif
#if defined(__aarch64__)
    &kNeon,
#endif
    &kScalar};

// Whatever the #ifs above keep, callers' kMaxKernelSets arrays hold every
// set, scalar comes last (every CPU runs it: supported_isas always has a
// fallback), and every set's igemm names carry its tiles.
constexpr size_t kNumBuiltIsas = sizeof(kBuiltIsas) / sizeof(kBuiltIsas[0]);
static_assert(kNumBuiltIsas <= size_t(kMaxKernelSets), "kMaxKernelSets (isa.h) is smaller than kBuiltIsas");
static_assert(kBuiltIsas[kNumBuiltIsas - 1] == &kScalar, "kBuiltIsas must end with the scalar fallback");
constexpr bool all_tiles_named() {
  for (const Isa* k : kBuiltIsas) {
    if (!tiles_named(*k)) return false;
  }
  return true;
}
static_assert(all_tiles_named(), "an igemm kernel's name does not carry the tile its config says");

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
  const Isa* isas[kMaxKernelSets];
  const int n = supported_isas(isas, kMaxKernelSets);
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
  TERN_CPU_USE(k, igemm[0], qs8_igemm_ukernel_4x16__scalar);
  TERN_CPU_USE(k, igemm_f32[0], qs8_igemm_f32_ukernel_4x16__scalar);
  TERN_CPU_USE(k, dwconv, qs8_dwconv_ukernel__scalar);
  TERN_CPU_USE(k, quantize, qs8_quantize_ukernel__scalar);
  TERN_CPU_USE(k, binary, qs8_binary_ukernel__scalar);
  TERN_CPU_USE(k, minmax, f32_minmax_ukernel__scalar);
  TERN_CPU_USE(k, pool, qs8_pool_ukernel__scalar);
  return k;
}
constexpr Qs8Kernels kQs8Scalar = qs8_scalar();
#if defined(__x86_64__)
constexpr Qs8Kernels qs8_avx2() {
  Qs8Kernels k = qs8_scalar();
  k.name = "avx2";
  k.mr = 3;
  k.panels = 1;
  TERN_CPU_USE(k, igemm[0], qs8_igemm_ukernel_3x16__avx2);
  TERN_CPU_USE(k, igemm_f32[0], qs8_igemm_f32_ukernel_3x16__avx2);
  TERN_CPU_USE(k, dwconv, qs8_dwconv_ukernel__avx2);
  TERN_CPU_USE(k, quantize, qs8_quantize_ukernel__avx2);
  TERN_CPU_USE(k, binary, qs8_binary_ukernel__avx2);
  TERN_CPU_USE(k, minmax, f32_minmax_ukernel__avx2);
  TERN_CPU_USE(k, pool, qs8_pool_ukernel__avx2);
  return k;
}
// The AVX-512 sets: VNNI's 6-row GEMMs over up to 4 panels; AMX's tiles of
// 16 rows, bracketed by begin and end (the tile configuration).
constexpr Qs8Kernels qs8_vnni() {
  Qs8Kernels k = qs8_avx2();  // its pool kernel stays avx2's
  k.name = "avx512vnni";
  k.mr = 6;
  k.panels = 4;
  TERN_CPU_USE(k, igemm[0], qs8_igemm_ukernel_6x16__avx512vnni);
  TERN_CPU_USE(k, igemm[1], qs8_igemm_ukernel_6x32__avx512vnni);
  TERN_CPU_USE(k, igemm[2], qs8_igemm_ukernel_6x48__avx512vnni);
  TERN_CPU_USE(k, igemm[3], qs8_igemm_ukernel_6x64__avx512vnni);
  TERN_CPU_USE(k, igemm_f32[0], qs8_igemm_f32_ukernel_6x16__avx512vnni);
  TERN_CPU_USE(k, igemm_f32[1], qs8_igemm_f32_ukernel_6x32__avx512vnni);
  TERN_CPU_USE(k, igemm_f32[2], qs8_igemm_f32_ukernel_6x48__avx512vnni);
  TERN_CPU_USE(k, igemm_f32[3], qs8_igemm_f32_ukernel_6x64__avx512vnni);
  TERN_CPU_USE(k, dwconv, qs8_dwconv_ukernel__avx512vnni);
  TERN_CPU_USE(k, quantize, qs8_quantize_ukernel__avx512vnni);
  TERN_CPU_USE(k, binary, qs8_binary_ukernel__avx512vnni);
  TERN_CPU_USE(k, minmax, f32_minmax_ukernel__avx512vnni);
  k.unsigned_a = true;
  return k;
}
constexpr Qs8Kernels qs8_amx() {
  Qs8Kernels k = qs8_vnni();  // its dwconv, quantize, binary, minmax and pool stay VNNI's
  k.name = "amx";
  k.mr = 16;
  TERN_CPU_USE(k, igemm[0], qs8_igemm_ukernel_16x16__amx);
  TERN_CPU_USE(k, igemm[1], qs8_igemm_ukernel_16x32__amx);
  TERN_CPU_USE(k, igemm[2], qs8_igemm_ukernel_16x48__amx);
  TERN_CPU_USE(k, igemm[3], qs8_igemm_ukernel_16x64__amx);
  TERN_CPU_USE(k, igemm_f32[0], qs8_igemm_f32_ukernel_16x16__amx);
  TERN_CPU_USE(k, igemm_f32[1], qs8_igemm_f32_ukernel_16x32__amx);
  TERN_CPU_USE(k, igemm_f32[2], qs8_igemm_f32_ukernel_16x48__amx);
  TERN_CPU_USE(k, igemm_f32[3], qs8_igemm_f32_ukernel_16x64__amx);
  k.unsigned_a = false;
  TERN_CPU_USE(k, begin, qs8_igemm_begin__amx);
  TERN_CPU_USE(k, end, qs8_igemm_end__amx);
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
  TERN_CPU_USE(k, igemm[0], qs8_igemm_ukernel_4x16__neondot);
  TERN_CPU_USE(k, igemm_f32[0], qs8_igemm_f32_ukernel_4x16__neondot);
  TERN_CPU_USE(k, dwconv, qs8_dwconv_ukernel__neondot);
  TERN_CPU_USE(k, quantize, qs8_quantize_ukernel__neondot);
  TERN_CPU_USE(k, binary, qs8_binary_ukernel__neondot);
  TERN_CPU_USE(k, minmax, f32_minmax_ukernel__neondot);
  TERN_CPU_USE(k, pool, qs8_pool_ukernel__neondot);
  return k;
}
constexpr Qs8Kernels kQs8NeonDot = qs8_neondot();
#endif

// Each ISA's block-quantized kernels (ukernels/qb.h), by name as the others.
constexpr QbKernels qb_scalar() {
  QbKernels k{};
  k.name = "scalar";
  k.mr = 4;
  k.nr = 1;
  TERN_CPU_USE(k, quantize, qb_quantize_ukernel__scalar);
  TERN_CPU_USE(k, gemm[0], qb_q4_0_gemm_ukernel_4x1__scalar);
  TERN_CPU_USE(k, gemm[1], qb_q4_1_gemm_ukernel_4x1__scalar);
  TERN_CPU_USE(k, gemm[2], qb_q8_0_gemm_ukernel_4x1__scalar);
  return k;
}
constexpr QbKernels kQbScalar = qb_scalar();
#if defined(__x86_64__)
constexpr QbKernels qb_avx2() {
  QbKernels k{};
  k.name = "avx2";
  k.mr = 4;
  k.nr = 1;
  TERN_CPU_USE(k, quantize, qb_quantize_ukernel__avx2);
  TERN_CPU_USE(k, gemm[0], qb_q4_0_gemm_ukernel_4x1__avx2);
  TERN_CPU_USE(k, gemm[1], qb_q4_1_gemm_ukernel_4x1__avx2);
  TERN_CPU_USE(k, gemm[2], qb_q8_0_gemm_ukernel_4x1__avx2);
  TERN_CPU_USE(k, pack_tile, qb_pack_tile_ukernel__avx2);
  TERN_CPU_USE(k, gemm_tile[0], qb_q4_0_gemm_tile_ukernel_16x1__avx2);
  TERN_CPU_USE(k, gemm_tile[1], qb_q4_1_gemm_tile_ukernel_16x1__avx2);
  TERN_CPU_USE(k, gemm_tile[2], qb_q8_0_gemm_tile_ukernel_16x1__avx2);
  return k;
}
constexpr QbKernels qb_vnni() {
  QbKernels k{};
  k.name = "avx512vnni";
  k.mr = 4;
  k.nr = 2;
  TERN_CPU_USE(k, quantize, qb_quantize_ukernel__avx512vnni);
  TERN_CPU_USE(k, gemm[0], qb_q4_0_gemm_ukernel_4x2__avx512vnni);
  TERN_CPU_USE(k, gemm[1], qb_q4_1_gemm_ukernel_4x2__avx512vnni);
  TERN_CPU_USE(k, gemm[2], qb_q8_0_gemm_ukernel_4x2__avx512vnni);
  TERN_CPU_USE(k, pack_tile, qb_pack_tile_ukernel__avx512vnni);
  TERN_CPU_USE(k, gemm_tile[0], qb_q4_0_gemm_tile_ukernel_16x2__avx512vnni);
  TERN_CPU_USE(k, gemm_tile[1], qb_q4_1_gemm_tile_ukernel_16x2__avx512vnni);
  TERN_CPU_USE(k, gemm_tile[2], qb_q8_0_gemm_tile_ukernel_16x2__avx512vnni);
  return k;
}
constexpr QbKernels kQbAvx2 = qb_avx2();
constexpr QbKernels kQbVnni = qb_vnni();
#endif
#if defined(__aarch64__)
constexpr QbKernels qb_neondot() {
  QbKernels k{};
  k.name = "neondot";
  k.mr = 4;
  k.nr = 1;
  TERN_CPU_USE(k, quantize, qb_quantize_ukernel__neondot);
  TERN_CPU_USE(k, gemm[0], qb_q4_0_gemm_ukernel_4x1__neondot);
  TERN_CPU_USE(k, gemm[1], qb_q4_1_gemm_ukernel_4x1__neondot);
  TERN_CPU_USE(k, gemm[2], qb_q8_0_gemm_ukernel_4x1__neondot);
  TERN_CPU_USE(k, pack_tile, qb_pack_tile_ukernel__neondot);
  TERN_CPU_USE(k, gemm_tile[0], qb_q4_0_gemm_tile_ukernel_16x1__neondot);
  TERN_CPU_USE(k, gemm_tile[1], qb_q4_1_gemm_tile_ukernel_16x1__neondot);
  TERN_CPU_USE(k, gemm_tile[2], qb_q8_0_gemm_tile_ukernel_16x1__neondot);
  return k;
}
constexpr QbKernels kQbNeonDot = qb_neondot();
#endif

#undef TERN_CPU_USE
#undef TERN_CPU_USE_IGEMM

// Every block-quantized kernel set this build has, best first.
constexpr const QbKernels* kBuiltQb[] = {
#if defined(__x86_64__)
    &kQbVnni, &kQbAvx2,
#endif
#if defined(__aarch64__)
    &kQbNeonDot,
#endif
    &kQbScalar};
constexpr size_t kNumBuiltQb = sizeof(kBuiltQb) / sizeof(kBuiltQb[0]);
static_assert(kNumBuiltQb <= size_t(kMaxKernelSets), "kMaxKernelSets (isa.h) is smaller than kBuiltQb");
static_assert(kBuiltQb[kNumBuiltQb - 1] == &kQbScalar, "kBuiltQb must end with the scalar fallback");
// Each gemm kernel's name carries its set's tile, mr x nr.
constexpr bool qb_tiles_named() {
  for (const QbKernels* k : kBuiltQb) {
    const char* const roles[kQbFormats] = {"gemm[0]", "gemm[1]", "gemm[2]"};
    for (const char* role : roles) {
      if (!named_tile(k->names.of(role), k->mr, k->nr)) return false;
    }
  }
  return true;
}
static_assert(qb_tiles_named(), "a qb gemm kernel's name does not carry its set's rows");

// Every int8 kernel set this build has, best first (as kBuiltIsas, with
// the same checks).
constexpr const Qs8Kernels* kBuiltQs8[] = {
#if defined(__x86_64__)
    &kQs8Amx, &kQs8Vnni, &kQs8Avx2,
#endif
#if defined(__aarch64__)
    &kQs8NeonDot,
#endif
    &kQs8Scalar};

constexpr size_t kNumBuiltQs8 = sizeof(kBuiltQs8) / sizeof(kBuiltQs8[0]);
static_assert(kNumBuiltQs8 <= size_t(kMaxKernelSets), "kMaxKernelSets (isa.h) is smaller than kBuiltQs8");
static_assert(kBuiltQs8[kNumBuiltQs8 - 1] == &kQs8Scalar, "kBuiltQs8 must end with the scalar fallback");
// Panel p's igemm kernels are named mr x 16 (p + 1).
constexpr bool qs8_tiles_named() {
  const char* const roles[2][4] = {{"igemm[0]", "igemm[1]", "igemm[2]", "igemm[3]"},
                                   {"igemm_f32[0]", "igemm_f32[1]", "igemm_f32[2]", "igemm_f32[3]"}};
  for (const Qs8Kernels* k : kBuiltQs8) {
    for (int p = 0; p < k->panels; ++p) {
      for (const auto& role : roles) {
        if (!named_tile(k->names.of(role[p]), k->mr, 16 * (p + 1))) return false;
      }
    }
  }
  return true;
}
static_assert(qs8_tiles_named(), "an int8 igemm kernel's name does not carry its set's rows and its columns");

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

int supported_qb_kernels(const QbKernels** out, int max) {
  const CpuFeatures& f = cpu_features();
  int n = 0;
  for (const QbKernels* k : kBuiltQb) {
    if (n < max && cpu_runs(k->name, f)) out[n++] = k;
  }
  return n;
}

const QbKernels& qb_kernels_for(const char* qs8_name) {
  // amx's int8 sets are avx512vnni's but for the GEMM tiles
  const char* want = strcmp(qs8_name, "amx") == 0 ? "avx512vnni" : qs8_name;
  for (const QbKernels* k : kBuiltQb) {
    if (strcmp(k->name, want) == 0) return *k;
  }
  return kQbScalar;
}

const Qs8Kernels* select_qs8_kernels() {
  const KernelChoice c = choose_kernels();
  if (c.qs8 == nullptr) TERN_LOG_ERROR("%s", c.refusal);
  return c.qs8;
}

}  // namespace cpu
}  // namespace tern
