// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/emulation_signs.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

// As qemu-aarch64 7.2 shows an AArch64 process on an Intel host: the host's own /proc/cpuinfo.
constexpr std::string_view kX86Cpuinfo =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
    "model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu vme avx2\n\n";
// A Cortex-A76 core of a real AArch64 Linux machine.
constexpr std::string_view kArmCpuinfo =
    "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
    "asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
    "CPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n\n";

TEST(EmulationSignsTest, AnX86CpuinfoInAnArmProcessIsASign) {
  const std::string sign = arm_emulation_sign(kX86Cpuinfo, 0x414fd0b1);
  EXPECT_EQ(sign, "/proc/cpuinfo describes an x86 CPU (Intel(R) Xeon(R) Processor)");
  EXPECT_FALSE(arm_emulation_sign(kX86Cpuinfo, std::nullopt).empty());
}

TEST(EmulationSignsTest, QemusMaxCpuNamesNoImplementer) {
  const std::string sign = arm_emulation_sign(kArmCpuinfo, 0x000f0510);
  EXPECT_NE(sign.find("MIDR_EL1 0xf0510"), std::string::npos) << sign;
  // Unreadable /proc/cpuinfo: the register alone.
  EXPECT_FALSE(arm_emulation_sign("", 0x000f0510).empty());
}

TEST(EmulationSignsTest, ARealArmCpuShowsNone) {
  EXPECT_EQ(arm_emulation_sign(kArmCpuinfo, 0x414fd0b1), "");
  EXPECT_EQ(arm_emulation_sign(kArmCpuinfo, std::nullopt), "");
  EXPECT_EQ(arm_emulation_sign("", std::nullopt), "");
}

TEST(EmulationSignsTest, ThisProcessIsSeenAsItRuns) {
#if defined(STATICLM_TESTS_RUN_EMULATED)
  // The cross build's tests run under qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR).
  EXPECT_FALSE(host_emulation_sign().empty());
#elif !defined(__aarch64__)
  EXPECT_EQ(host_emulation_sign(), "");
#else
  GTEST_SKIP() << "a native AArch64 run: " << host_emulation_sign();
#endif
}

}  // namespace
}  // namespace staticlm
