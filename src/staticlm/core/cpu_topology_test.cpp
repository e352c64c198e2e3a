// SPDX-License-Identifier: Apache-2.0
// count_physical_cores over a fake sysfs tree: SMT siblings count once, cores of two packages
// with the same core id count twice, a CPU without topology files counts as its own core.
#include "staticlm/core/cpu_topology.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

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

TEST(CpuTopologyTest, ThisMachineHasAtLeastOneCoreAndNoMoreThanItsCpus) {
  const int cores = physical_core_count();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace staticlm
