// SPDX-License-Identifier: Apache-2.0
// The default thread count: the physical cores this process may run on, and on a CPU that mixes
// fast and slow cores (big.LITTLE: phones, many Arm boards) only the fast ones. SMT siblings share
// one core's vector units and caches, so a second thread per core slows bandwidth- and FMA-bound
// kernels down instead of helping (llama.cpp defaults to physical cores for the same reason); a
// slow core holds every barrier of a split op back, so it costs more than it brings.
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

// Which of `cpus` a default thread count runs on. A CPU's speed is what Linux says of it under
// `sysfs_cpu_dir`: cpuN/cpu_capacity (the scheduler's relative performance, 1024 for the fastest;
// Arm kernels and Android have it), else cpuN/cpufreq/cpuinfo_max_freq. The CPUs at or above half
// the fastest one's are chosen: a prime core and its big siblings work together, the little ones
// (a quarter to a third of their speed) are left out. Every CPU is chosen when either file is
// missing for some CPU (most x86 machines and VMs) or all are alike.
struct CoreChoice {
  std::vector<int> cpus;  // the CPUs chosen, ascending
  int cores = 0;          // physical cores among them: the default thread count
  std::string basis;      // "cpu_capacity" or "cpuinfo_max_freq" when slow CPUs were left out, else ""
  size_t candidates = 0;  // how many CPUs there were to choose from
};
CoreChoice choose_fast_cores(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus);

// choose_fast_cores over this process's affinity mask and /sys/devices/system/cpu; where neither
// the mask nor the topology can be read, std::thread::hardware_concurrency() cores; at least 1.
CoreChoice default_cores();

// The default thread count: default_cores().cores.
int default_thread_count();

// "cpu4-7", "cpu0,2,5-6": how messages name a set of CPUs.
std::string cpu_list_string(const std::vector<int>& cpus);

// One line for people: "2 threads on the physical cores of cpu0-1", or "4 threads on the fast
// cores cpu4-7 (by cpu_capacity; 8 CPUs)".
std::string describe_core_choice(const CoreChoice& choice);

}  // namespace staticlm
