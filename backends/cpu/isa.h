// Which microkernels the cpu backend runs: chosen once per delegate, at
// load, from the running CPU's features (runtime/core/cpu_info.h), or forced
// for tests and benchmarks with the environment variable
// TERN_CPU_ISA=scalar|avx2|avx512|amx|neon (amx: avx512's float kernels with
// the AMX int8 GEMMs).
//
//   tern::cpu::KernelChoice c = tern::cpu::choose_kernels();   // reads TERN_CPU_ISA
//   if (c.isa == nullptr) { ... c.refusal says why ... }
//   c.isa->igemm_main.ukernel(...);
//   c.isa->names.of("igemm_main");   // "f32_igemm_ukernel_6x16__avx2" (kernel_names.h)
//
// A forced ISA is refused for one of three reasons, each with its own words
// (tests skip on the first and fail on the others):
//   "TERN_CPU_ISA=avx512: this CPU lacks it (avx512 needs AVX-512F, AVX2 and FMA)"
//     (also for another architecture's ISA: "this CPU lacks it (an aarch64 ISA; ...)")
//   "TERN_CPU_ISA=avx512: this build has no avx512 kernels (compiled out)"
//   "TERN_CPU_ISA=avx3: no such ISA (scalar, avx2, avx512, amx, neon)"
//
// Thread safety: the table is immutable; select_isa() may be called from any
// thread (it reads the environment each call, so tests can switch ISAs).
#pragma once

#include "backends/cpu/kernel_names.h"
#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

struct Qs8Kernels;  // ukernels/qs8.h

// The most kernel sets of one kind (float, int8) a build has: arrays that
// supported_isas and supported_qs8_kernels fill take this many. isa.cpp
// checks at compile time that each list fits and ends with scalar.
constexpr int kMaxKernelSets = 4;

struct Isa {
  const char* name;        // "avx512"
  IgemmConfig igemm_main;  // the widest tile
  IgemmConfig igemm_tail;  // one panel, for the last odd panel
  IgemmConfig igemm_row;   // one row, up to 4 panels: outputs of few pixels
  DwconvUkernel dwconv;           // any pixel, through per-pixel tap pointers
  DwconvRowsUkernel dwconv_rows;  // a row's interior pixels
  VactUkernel vact;
  PoolUkernel pool;
  WinogradInUkernel winograd_in;
  WinogradOutUkernel winograd_out;
  AttnDotsUkernel attn_dots;  // attention of few query rows over keys in place
  AttnWsumUkernel attn_wsum;
  KernelNames<11> names;  // each kernel above by its field: "igemm_main" -> "f32_igemm_ukernel_6x16__avx2"
};

// The ISAs this build has and this CPU runs, best first (scalar last, when
// max allows: out holds kMaxKernelSets for all of them).
int supported_isas(const Isa** out, int max);

// The float and int8 kernel sets a delegate runs: those TERN_CPU_ISA names
// (or `forced`), else the best this build has and this CPU runs.
struct KernelChoice {
  const Isa* isa = nullptr;         // both set, or both nullptr when refused
  const Qs8Kernels* qs8 = nullptr;
  char refusal[192] = "";           // why refused ("TERN_CPU_ISA=avx512: this CPU lacks it (...)")
};
KernelChoice choose_kernels();
KernelChoice choose_kernels(const char* forced);  // nullptr or "": the best

// choose_kernels().isa, logging the refusal.
const Isa* select_isa();

// The ISA called `name`, if this build has it and this CPU runs it.
const Isa* find_isa(const char* name);

}  // namespace cpu
}  // namespace tern
