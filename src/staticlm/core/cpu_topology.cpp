// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <thread>
#include <utility>

namespace staticlm {
namespace {

// The integer in a one-line sysfs file, or -1.
long read_id(const std::string& path) {
  std::ifstream in(path);
  long value = -1;
  if (!(in >> value)) {
    return -1;
  }
  return value;
}

// A sysfs cache size: "49152K", "2M", or plain bytes; 0 when unreadable.
uint64_t read_cache_size(const std::string& path) {
  std::ifstream in(path);
  uint64_t value = 0;
  std::string unit;
  if (!(in >> value)) {
    return 0;
  }
  in >> unit;  // directly after the digits; none for bytes
  if (!unit.empty() && (unit[0] == 'K' || unit[0] == 'k')) {
    return value << 10;
  }
  if (!unit.empty() && unit[0] == 'M') {
    return value << 20;
  }
  if (!unit.empty() && unit[0] == 'G') {
    return value << 30;
  }
  return value;
}

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return cpus;
  }
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) {
      cpus.push_back(cpu);
    }
  }
  return cpus;
}

}  // namespace

int count_physical_cores(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus) {
  std::set<std::pair<long, long>> cores;
  int unknown = 0;
  for (int cpu : cpus) {
    const std::string topology = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/topology/";
    const long package = read_id(topology + "physical_package_id");
    const long core = read_id(topology + "core_id");
    if (package < 0 || core < 0) {
      ++unknown;
    } else {
      cores.emplace(package, core);
    }
  }
  return static_cast<int>(cores.size()) + unknown;
}

uint64_t last_level_cache_bytes(const std::string& sysfs_cpu_dir) {
  uint64_t largest = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = sysfs_cpu_dir + "/cpu0/cache/index" + std::to_string(index);
    std::ifstream type_file(dir + "/type");
    std::string type;
    if (!(type_file >> type)) {
      continue;
    }
    if (type == "Data" || type == "Unified") {
      largest = std::max(largest, read_cache_size(dir + "/size"));
    }
  }
  return largest;
}

int physical_core_count() {
  const std::vector<int> cpus = affinity_cpus();
  const int cores = cpus.empty() ? 0 : count_physical_cores("/sys/devices/system/cpu", cpus);
  if (cores > 0) {
    return cores;
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace staticlm
