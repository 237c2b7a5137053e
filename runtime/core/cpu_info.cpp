#include "runtime/core/cpu_info.h"

#include <cstdio>
#include <cstdlib>

#if defined(__linux__)
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <sys/syscall.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <unistd.h>
#else
#include <unistd.h>
#endif

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "runtime/core/thread_pool.h"

namespace tern {

namespace {

#if defined(__linux__)
// The first integer in a small sysfs file, or -1.
long read_sysfs_long(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* end;
  long v = strtol(buf, &end, 10);
  return end == buf ? -1 : v;
}

// Cores with at least one CPU this process may run on (a core is named by
// the lowest CPU of its thread siblings), keeping those with at least half
// the largest capacity: on big.LITTLE CPUs, the performance cores.
int linux_physical_cores() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  constexpr int kMaxCpus = CPU_SETSIZE;
  bool core_seen[kMaxCpus] = {};
  long core_capacity[kMaxCpus];
  long max_capacity = 0;
  char path[128];
  for (int cpu = 0; cpu < kMaxCpus; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_cpus_list", cpu);
    long core = read_sysfs_long(path);
    if (core < 0) {
      snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
      core = read_sysfs_long(path);
    }
    if (core < 0 || core >= kMaxCpus) core = cpu;
    if (core_seen[core]) continue;
    core_seen[core] = true;
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpu_capacity", cpu);
    core_capacity[core] = read_sysfs_long(path);
    if (core_capacity[core] > max_capacity) max_capacity = core_capacity[core];
  }
  int cores = 0;
  for (int c = 0; c < kMaxCpus; ++c) {
    if (core_seen[c] && (max_capacity <= 0 || core_capacity[c] * 2 >= max_capacity)) ++cores;
  }
  return cores;
}
#endif

int count_physical_cores() {
  int cores = -1;
#if defined(__linux__)
  cores = linux_physical_cores();
#elif defined(__APPLE__)
  int n = 0;
  size_t size = sizeof(n);
  if (sysctlbyname("hw.perflevel0.physicalcpu", &n, &size, nullptr, 0) == 0 ||
      sysctlbyname("hw.physicalcpu", &n, &size, nullptr, 0) == 0) {
    cores = n;
  }
#endif
  if (cores < 1) cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (cores < 1) cores = 1;
  return cores < ThreadPool::kMaxThreads ? cores : ThreadPool::kMaxThreads;
}

}  // namespace

int physical_core_count() {
  static const int cores = count_physical_cores();
  return cores;
}

namespace {

#if defined(__x86_64__)
// AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25), the tile state
// enabled by the OS (XCR0 bits 17 and 18), and on Linux the process's
// permission to use it, which the kernel grants on request (arch_prctl
// ARCH_REQ_XCOMP_PERM for XTILEDATA, Linux 5.16 and later); elsewhere, no AMX.
bool amx_usable() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || ((edx >> 24) & 3) != 3) return false;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));  // OSXSAVE: implied by AVX-512 being usable
  if (((xcr0_lo >> 17) & 3) != 3) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

CpuFeatures detect_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's checks include the OS's support (XCR0) for ymm and zmm state.
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f") && f.avx2_fma;
  // with BW and VL (byte masks on xmm), which every CPU with VNNI has
  f.avx512_vnni = f.avx512f && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl");
  f.amx_int8 = f.avx512_vnni && amx_usable();
#elif defined(__aarch64__)
  f.neon = true;
#if defined(__linux__)
  f.neon_dot = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect_features();
  return features;
}

}  // namespace tern
