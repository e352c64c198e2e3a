// SPDX-License-Identifier: Apache-2.0
// count_physical_cores over a fake sysfs tree: SMT siblings count once, cores of two packages
// with the same core id count twice, a CPU without topology files counts as its own core.
#include "staticlm/core/cpu_topology.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

void write_cpu(const std::filesystem::path& root, int cpu, int package, int core) {
  const std::filesystem::path dir = root / ("cpu" + std::to_string(cpu)) / "topology";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "physical_package_id") << package << "\n";
  std::ofstream(dir / "core_id") << core << "\n";
}

TEST(CpuTopologyTest, CountsEachPhysicalCoreOnce) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "fake_sysfs_cpu";
  std::filesystem::remove_all(root);
  // Package 0: cores 0 and 1, each with two SMT siblings; package 1: core 0 (a second one).
  write_cpu(root, 0, 0, 0);
  write_cpu(root, 1, 0, 1);
  write_cpu(root, 2, 0, 0);
  write_cpu(root, 3, 0, 1);
  write_cpu(root, 4, 1, 0);
  EXPECT_EQ(count_physical_cores(root.string(), {0, 1, 2, 3}), 2);
  EXPECT_EQ(count_physical_cores(root.string(), {0, 2}), 1) << "siblings of one core";
  EXPECT_EQ(count_physical_cores(root.string(), {0, 1, 2, 3, 4}), 3) << "core 0 of two packages";
  EXPECT_EQ(count_physical_cores(root.string(), {0, 9}), 2) << "cpu9 has no topology: a core of its own";
  EXPECT_EQ(count_physical_cores(root.string(), {}), 0);
}

void write_cache(const std::filesystem::path& root, int index, const char* type, const char* size) {
  const std::filesystem::path dir = root / "cpu0" / "cache" / ("index" + std::to_string(index));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "type") << type << "\n";
  std::ofstream(dir / "size") << size << "\n";
}

TEST(CpuTopologyTest, LastLevelCacheIsTheLargestDataOrUnifiedOne) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "fake_sysfs_cache";
  std::filesystem::remove_all(root);
  EXPECT_EQ(last_level_cache_bytes(root.string()), 0u) << "no cache directories";
  write_cache(root, 0, "Data", "48K");
  write_cache(root, 1, "Instruction", "4096K");
  write_cache(root, 2, "Unified", "2048K");
  EXPECT_EQ(last_level_cache_bytes(root.string()), 2048u << 10) << "instruction caches do not count";
  write_cache(root, 3, "Unified", "260M");
  EXPECT_EQ(last_level_cache_bytes(root.string()), 260u << 20);
  write_cache(root, 5, "Unified", "1073741824");  // a gap in the indexes, and plain bytes
  EXPECT_EQ(last_level_cache_bytes(root.string()), 1u << 30);
}

void write_speed(const std::filesystem::path& root, int cpu, const char* file, long value) {
  const std::filesystem::path path = root / ("cpu" + std::to_string(cpu)) / file;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << value << "\n";
}

// A phone's SoC: cpu0-3 little (capacity 325), cpu4-6 big (870), cpu7 prime (1024).
TEST(CpuTopologyTest, BigLittleTakesTheFastCoresByCapacity) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "fake_sysfs_big_little";
  std::filesystem::remove_all(root);
  const long capacity[] = {325, 325, 325, 325, 870, 870, 870, 1024};
  for (int cpu = 0; cpu < 8; ++cpu) {
    write_cpu(root, cpu, 0, cpu);
    write_speed(root, cpu, "cpu_capacity", capacity[cpu]);
    write_speed(root, cpu, "cpufreq/cpuinfo_max_freq", cpu < 4 ? 1800000 : 2800000);
  }
  const CoreChoice choice = choose_fast_cores(root.string(), {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(choice.cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(choice.cores, 4);
  EXPECT_EQ(choice.basis, "cpu_capacity");
  EXPECT_EQ(describe_core_choice(choice), "4 threads on the fast cores cpu4-7 (by cpu_capacity; 8 CPUs)");
  // An affinity mask of little cores alone: they are the fastest it has.
  const CoreChoice little = choose_fast_cores(root.string(), {0, 1});
  EXPECT_EQ(little.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(little.basis, "");
  // A CPU without a capacity: the maximum frequencies decide (little 1.8 GHz, big 2.8: all kept).
  std::filesystem::remove(root / "cpu2" / "cpu_capacity");
  const CoreChoice by_freq = choose_fast_cores(root.string(), {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(by_freq.cpus.size(), 8u) << "1.8 GHz is more than half of 2.8";
  write_speed(root, 0, "cpufreq/cpuinfo_max_freq", 1000000);
  const CoreChoice slow_freq = choose_fast_cores(root.string(), {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(slow_freq.cpus, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(slow_freq.basis, "cpuinfo_max_freq");
}

TEST(CpuTopologyTest, WithoutSpeedsEveryCpuIsTaken) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "fake_sysfs_no_speeds";
  std::filesystem::remove_all(root);
  write_cpu(root, 0, 0, 0);
  write_cpu(root, 1, 0, 0);  // SMT siblings of one core
  write_cpu(root, 2, 0, 1);
  const CoreChoice choice = choose_fast_cores(root.string(), {2, 0, 1});
  EXPECT_EQ(choice.cpus, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(choice.cores, 2);
  EXPECT_EQ(describe_core_choice(choice), "2 threads on the physical cores of cpu0-2");
  EXPECT_EQ(cpu_list_string({0, 2, 5, 6}), "cpu0,2,5-6");
}

TEST(CpuTopologyTest, ThisMachineHasAtLeastOneCoreAndNoMoreThanItsCpus) {
  const int cores = default_thread_count();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace staticlm
