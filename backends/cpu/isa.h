// Which microkernels the cpu backend runs: chosen once, from the running
// CPU's features (runtime/core/cpu_info.h), or forced for tests and
// benchmarks with the environment variable TERN_CPU_ISA=scalar|avx2|avx512|neon.
//
//   const tern::cpu::Isa* isa = tern::cpu::select_isa();   // nullptr: forced ISA unsupported
//   isa->igemm_main.ukernel(...);
//
// Thread safety: the table is immutable; select_isa() may be called from any
// thread (it reads the environment each call, so tests can switch ISAs).
#pragma once

#include "backends/cpu/ukernels/ukernels.h"

namespace tern {
namespace cpu {

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
};

// The ISAs this build has and this CPU runs, best first (scalar last).
int supported_isas(const Isa** out, int max);

// TERN_CPU_ISA if set (nullptr, with a log line, when this CPU or build
// cannot run it), else the best supported ISA.
const Isa* select_isa();

// The ISA called `name`, if this build has it and this CPU runs it.
const Isa* find_isa(const char* name);

}  // namespace cpu
}  // namespace tern
