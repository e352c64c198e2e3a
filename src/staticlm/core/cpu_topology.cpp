// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
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

CoreChoice choose_fast_cores(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus) {
  CoreChoice choice;
  choice.candidates = cpus.size();
  choice.cpus = cpus;
  std::sort(choice.cpus.begin(), choice.cpus.end());
  for (const char* basis : {"cpu_capacity", "cpufreq/cpuinfo_max_freq"}) {
    std::vector<long> speeds;
    for (int cpu : choice.cpus) {
      const long speed = read_id(sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/" + basis);
      if (speed <= 0) {
        break;
      }
      speeds.push_back(speed);
    }
    if (speeds.empty() || speeds.size() != choice.cpus.size()) {
      continue;  // not known for every CPU: the next basis, or all of them
    }
    const long fastest = *std::max_element(speeds.begin(), speeds.end());
    std::vector<int> fast;
    for (size_t i = 0; i < speeds.size(); ++i) {
      if (2 * speeds[i] >= fastest) {
        fast.push_back(choice.cpus[i]);
      }
    }
    if (fast.size() < choice.cpus.size()) {
      choice.cpus = std::move(fast);
      choice.basis = std::string(basis).substr(std::string(basis).rfind('/') + 1);
    }
    break;
  }
  choice.cores = count_physical_cores(sysfs_cpu_dir, choice.cpus);
  return choice;
}

CoreChoice default_cores() {
  CoreChoice choice = choose_fast_cores("/sys/devices/system/cpu", affinity_cpus());
  if (choice.cores <= 0) {
    choice.cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  return choice;
}

int default_thread_count() {
  return default_cores().cores;
}

std::string cpu_list_string(const std::vector<int>& cpus) {
  std::string out = "cpu";
  for (size_t i = 0; i < cpus.size();) {
    size_t end = i;
    while (end + 1 < cpus.size() && cpus[end + 1] == cpus[end] + 1) {
      ++end;
    }
    out += (i == 0 ? "" : ",") + std::to_string(cpus[i]);
    if (end > i) {
      out += "-" + std::to_string(cpus[end]);
    }
    i = end + 1;
  }
  return cpus.empty() ? "no CPU known" : out;
}

std::string describe_core_choice(const CoreChoice& choice) {
  const std::string threads = std::to_string(choice.cores) + (choice.cores == 1 ? " thread" : " threads");
  if (choice.basis.empty()) {
    return threads + " on the physical cores of " + cpu_list_string(choice.cpus);
  }
  return threads + " on the fast cores " + cpu_list_string(choice.cpus) + " (by " + choice.basis + "; " +
         std::to_string(choice.candidates) + " CPUs)";
}

}  // namespace staticlm
