// SPDX-License-Identifier: Apache-2.0
// How many physical cores this process may run on: the default thread count. SMT siblings share
// one core's vector units and caches, so a second thread per core slows bandwidth- and FMA-bound
// kernels down instead of helping (llama.cpp defaults to physical cores for the same reason).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace staticlm {

// The distinct (package, core) pairs of `cpus` as Linux's sysfs under `sysfs_cpu_dir` (normally
// /sys/devices/system/cpu) describes them in cpuN/topology/{physical_package_id,core_id}. A CPU
// whose topology cannot be read counts as a core of its own; 0 when `cpus` is empty.
int count_physical_cores(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus);

// The largest data or unified cache of cpu0 under `sysfs_cpu_dir` (cpu0/cache/index*/{type,size}),
// in bytes: the last-level cache a working set must fit to be read from cache rather than memory.
// 0 when sysfs does not say (some virtual machines, other kernels).
uint64_t last_level_cache_bytes(const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");

// The physical cores among the CPUs in this process's affinity mask; where neither the mask nor
// the topology can be read, std::thread::hardware_concurrency(); at least 1.
int physical_core_count();

}  // namespace staticlm
