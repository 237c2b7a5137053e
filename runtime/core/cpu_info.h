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

}  // namespace tern
