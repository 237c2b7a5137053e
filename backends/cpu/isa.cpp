// The one place that maps CPU features to microkernels (STYLE.md: no #if
// ladders in kernel bodies).
#include "backends/cpu/isa.h"

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

}  // namespace

int supported_isas(const Isa** out, int max) {
  const CpuFeatures& f = cpu_features();
  int n = 0;
  auto add = [&](const Isa* isa) {
    if (n < max) out[n++] = isa;
  };
#if defined(__x86_64__)
  if (f.avx512f) add(&kAvx512);
  if (f.avx2_fma) add(&kAvx2);
#endif
#if defined(__aarch64__)
  if (f.neon) add(&kNeon);
#endif
  (void)f;
  add(&kScalar);
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

// TERN_CPU_ISA=amx names the int8 kernel set; its float kernels are avx512's.
static const char* float_isa_name(const char* forced) { return strcmp(forced, "amx") == 0 ? "avx512" : forced; }

const Isa* select_isa() {
  const char* forced = getenv("TERN_CPU_ISA");
  if (forced == nullptr || forced[0] == '\0') {
    const Isa* best;
    supported_isas(&best, 1);
    return best;
  }
  const Isa* isa = find_isa(float_isa_name(forced));
  if (isa == nullptr) {
    TERN_LOG_ERROR("TERN_CPU_ISA=%s: this build or this CPU cannot run it (scalar, avx2, avx512, amx on x86-64 "
                   "with the CPU features; neon on aarch64)", forced);
  }
  return isa;
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

}  // namespace

int supported_qs8_kernels(const Qs8Kernels** out, int max) {
  const CpuFeatures& f = cpu_features();
  int n = 0;
  auto add = [&](const Qs8Kernels* k) {
    if (n < max) out[n++] = k;
  };
#if defined(__x86_64__)
  if (f.amx_int8) add(&kQs8Amx);
  if (f.avx512_vnni) add(&kQs8Vnni);
  if (f.avx2_fma) add(&kQs8Avx2);
#endif
#if defined(__aarch64__)
  if (f.neon_dot) add(&kQs8NeonDot);
#endif
  (void)f;
  add(&kQs8Scalar);
  return n;
}

const Qs8Kernels* select_qs8_kernels() {
  const Qs8Kernels* sets[4];
  const int n = supported_qs8_kernels(sets, 4);
  const char* forced = getenv("TERN_CPU_ISA");
  if (forced == nullptr || forced[0] == '\0') return sets[0];
  // TERN_CPU_ISA names the float ISA; its int8 counterpart: avx512 -> VNNI
  // (or AVX2 on AVX-512 CPUs without VNNI), neon -> neondot (or scalar
  // without the dot product); amx (avx512 floats) -> amx only.
  const char* want = strcmp(forced, "avx512") == 0 ? "avx512vnni" : strcmp(forced, "neon") == 0 ? "neondot" : forced;
  if (find_isa(float_isa_name(forced)) == nullptr) return nullptr;
  for (int i = 0; i < n; ++i) {
    if (strcmp(sets[i]->name, want) == 0) return sets[i];
  }
  if (strcmp(want, "avx512vnni") == 0 || strcmp(want, "neondot") == 0) {  // the CPU lacks the dot product
    const char* fallback = strcmp(want, "neondot") == 0 ? "scalar" : "avx2";
    for (int i = 0; i < n; ++i) {
      if (strcmp(sets[i]->name, fallback) == 0) return sets[i];
    }
  }
  return nullptr;
}

}  // namespace cpu
}  // namespace tern
