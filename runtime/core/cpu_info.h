// What the CPU this process runs on offers. Read from the OS once, at first
// use (load time); the answers are cached.
#pragma once

namespace tern {

// The number of physical cores this process may run on: the default thread
// count of tern::Module, tern-run and the Python bindings. On CPUs with
// performance and efficiency cores, the performance cores only. At least 1,
// at most ThreadPool::kMaxThreads. On Linux it reads the affinity mask and
// the topology under /sys/devices/system/cpu.
int physical_core_count();

// Instruction-set extensions the CPU and the OS both support (the OS must
// save the wider registers: checked on x86 through XCR0). Only what Tern's
// microkernels use.
struct CpuFeatures {
  bool avx2_fma = false;  // x86: AVX2 and FMA3
  bool avx512f = false;   // x86: AVX-512 Foundation (zmm registers, masks)
  bool avx512_vnni = false;  // x86: AVX-512 VNNI, with BW and VL
  bool amx_int8 = false;  // x86: AMX tiles and their int8 dot product (with AVX-512 VNNI), the
                          // OS's permission to use them requested (Linux, once per process)
  bool neon = false;      // aarch64: Advanced SIMD (always there on aarch64)
  bool neon_dot = false;  // aarch64: SDOT/UDOT
};
const CpuFeatures& cpu_features();

}  // namespace tern
