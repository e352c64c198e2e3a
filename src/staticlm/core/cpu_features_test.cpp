// SPDX-License-Identifier: Apache-2.0
// What the host CPU can run: the vendor, the features Linux's auxiliary vector reports on AArch64,
// and the `isa` caps of this build's architecture, which only ever take features away.
#include "staticlm/core/cpu_features.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

bool has_cap(std::string_view name) {
  for (const IsaCap& cap : isa_caps()) {
    if (cap.name == name) {
      return true;
    }
  }
  return false;
}

// The vendor CPUID names is the one the kernel reports in /proc/cpuinfo.
TEST(CpuFeaturesTest, TheVendorIsTheOneTheKernelReports) {
  if (!has_cap("avx2")) {
    // Under qemu-user, /proc/cpuinfo is the x86 host's, not the emulated CPU's.
    GTEST_SKIP() << "cpu_vendor() reads x86's CPUID; this build is not for x86-64";
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::string reported;
  while (reported.empty() && std::getline(cpuinfo, line)) {
    if (line.rfind("vendor_id", 0) == 0) {
      reported = line.substr(line.find(':') + 2);
    }
  }
  if (reported.empty()) {
    GTEST_SKIP() << "no vendor_id in /proc/cpuinfo (not an x86 Linux host)";
  }
  const CpuVendor expected = reported == "GenuineIntel"   ? CpuVendor::kIntel
                             : reported == "AuthenticAMD" ? CpuVendor::kAmd
                                                          : CpuVendor::kOther;
  EXPECT_EQ(cpu_vendor(), expected) << reported;
}

TEST(CpuFeaturesTest, IsaNamesCapTheHostFeatures) {
  const CpuFeatures host = CpuFeatures::host();
  ASSERT_GE(isa_caps().size(), 2u);
  EXPECT_EQ(isa_caps().front().name, "auto");
  EXPECT_EQ(isa_caps().back().name, "portable");
  EXPECT_EQ(*cpu_features_for_isa("auto"), host);
  EXPECT_EQ(*cpu_features_for_isa("portable"), CpuFeatures());
  std::string names;
  for (const IsaCap& cap : isa_caps()) {
    SCOPED_TRACE(cap.name);
    auto capped = cpu_features_for_isa(cap.name);
    ASSERT_TRUE(capped.ok()) << capped.status().to_string();
    EXPECT_TRUE(host.covers(*capped));
    EXPECT_TRUE(cap.most.covers(*capped));
    names += names.empty() ? std::string(cap.name) : ", " + std::string(cap.name);
  }
  if (has_cap("avx2")) {
    EXPECT_FALSE(cpu_features_for_isa("avx2")->has(CpuFeature::kAvx512));
    EXPECT_EQ(cpu_features_for_isa("avx2")->has(CpuFeature::kAvxVnni), host.has(CpuFeature::kAvxVnni));
    // AMX tiles only where asked for by "amx" (or "auto"), and only where the host has them.
    EXPECT_FALSE(cpu_features_for_isa("avx512")->has(CpuFeature::kAmxBf16));
    EXPECT_FALSE(cpu_features_for_isa("avx512")->has(CpuFeature::kAmxInt8));
    EXPECT_EQ(cpu_features_for_isa("amx")->has(CpuFeature::kAmxBf16), host.has(CpuFeature::kAmxBf16));
    EXPECT_EQ(cpu_features_for_isa("amx")->has(CpuFeature::kAmxInt8), host.has(CpuFeature::kAmxInt8));
  }
  if (has_cap("neon")) {
    EXPECT_EQ(*cpu_features_for_isa("neon"), host.intersect(CpuFeatures().with(CpuFeature::kNeon)));
    EXPECT_FALSE(cpu_features_for_isa("dotprod")->has(CpuFeature::kNeonI8mm));
    EXPECT_EQ(cpu_features_for_isa("dotprod")->has(CpuFeature::kNeonDotProd), host.has(CpuFeature::kNeonDotProd));
    EXPECT_EQ(cpu_features_for_isa("i8mm")->has(CpuFeature::kNeonI8mm), host.has(CpuFeature::kNeonI8mm));
    EXPECT_FALSE(cpu_features_for_isa("i8mm")->has(CpuFeature::kSve));
    // bfdot / bfmmla only where asked for by "bf16" (or "auto"), and only where the host has them.
    EXPECT_FALSE(cpu_features_for_isa("i8mm")->has(CpuFeature::kNeonBf16));
    EXPECT_EQ(cpu_features_for_isa("bf16")->has(CpuFeature::kNeonBf16), host.has(CpuFeature::kNeonBf16));
    EXPECT_EQ(cpu_features_for_isa("bf16")->has(CpuFeature::kNeonI8mm), host.has(CpuFeature::kNeonI8mm));
    EXPECT_FALSE(cpu_features_for_isa("bf16")->has(CpuFeature::kSve));
  }
  auto bad = cpu_features_for_isa("sse2");
  ASSERT_FALSE(bad.ok());
  const size_t last_comma = names.rfind(", ");
  const std::string listed = names.substr(0, last_comma) + " or " + names.substr(last_comma + 2);
  EXPECT_NE(bad.status().message().find("expected " + listed), std::string::npos) << bad.status().message();
  // The other architecture's value is refused, saying whose it is.
  auto foreign = cpu_features_for_isa(has_cap("avx2") ? "neon" : "avx2");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find(has_cap("avx2") ? "is for AArch64 CPUs" : "is for x86-64 CPUs"),
            std::string::npos)
      << foreign.status().message();
}

TEST(CpuFeaturesTest, NamesFollowTheFeatures) {
  EXPECT_EQ(CpuFeatures().to_string(), "none");
  EXPECT_EQ(CpuFeatures().with(CpuFeature::kAvx2).with(CpuFeature::kAvx512Vnni).to_string(), "avx2 avx512_vnni");
  EXPECT_EQ(CpuFeatures().with(CpuFeature::kNeonDotProd).with(CpuFeature::kNeon).to_string(), "neon dotprod");
}

// Linux's AArch64 hwcap bits (arch/arm64/include/uapi/asm/hwcap.h): asimd 1, asimdhp 10, asimddp
// 20, sve 22 in AT_HWCAP; sve2 1, i8mm 13, bf16 14, sme 23 in AT_HWCAP2.
TEST(CpuFeaturesTest, ArmHwcapsBecomeFeatures) {
  EXPECT_EQ(cpu_features_from_arm_hwcaps(0, 0), CpuFeatures());
  // Nothing counts without asimd, the base every extension builds on.
  EXPECT_EQ(cpu_features_from_arm_hwcaps(1u << 20, 1u << 13), CpuFeatures());
  EXPECT_EQ(cpu_features_from_arm_hwcaps(1u << 1, 0).to_string(), "neon");
  EXPECT_EQ(cpu_features_from_arm_hwcaps((1u << 1) | (1u << 10), 0).to_string(), "neon fp16");
  EXPECT_EQ(cpu_features_from_arm_hwcaps((1u << 1) | (1u << 20), 0).to_string(), "neon dotprod");
  EXPECT_EQ(cpu_features_from_arm_hwcaps(1u << 1, 1u << 13).to_string(), "neon i8mm");
  EXPECT_EQ(cpu_features_from_arm_hwcaps(1u << 1, 1u << 14).to_string(), "neon bf16");
  EXPECT_EQ(cpu_features_from_arm_hwcaps((1u << 1) | (1u << 22), 1u << 1).to_string(), "neon sve sve2");
  EXPECT_EQ(cpu_features_from_arm_hwcaps(1u << 1, 1u << 23).to_string(), "neon sme");
  // The words qemu-aarch64 7.2 reports for -cpu cortex-a53, cortex-a76 and max.
  EXPECT_EQ(cpu_features_from_arm_hwcaps(0x8fb, 0).to_string(), "neon");
  EXPECT_EQ(cpu_features_from_arm_hwcaps(0x119ffb, 0).to_string(), "neon fp16 dotprod");
  EXPECT_EQ(cpu_features_from_arm_hwcaps(0xecfffffb, 0x7f877fff).to_string(),
            "neon fp16 dotprod i8mm bf16 sve sve2 sme");
}

// Under emulation the test presets name the CPU model's features (CMakePresets.json's aarch64
// test presets set STATICLM_EXPECT_CPU_FEATURES beside QEMU_CPU): detection must find exactly
// those on the emulated CPU.
TEST(CpuFeaturesTest, TheHostHasTheFeaturesTheTestRunExpects) {
  const char* expected = std::getenv("STATICLM_EXPECT_CPU_FEATURES");
  if (expected == nullptr) {
    GTEST_SKIP() << "STATICLM_EXPECT_CPU_FEATURES is not set (the aarch64 test presets set it per emulated CPU); "
                 << "this host has: " << CpuFeatures::host().to_string();
  }
  EXPECT_EQ(CpuFeatures::host().to_string(), expected);
}

}  // namespace
}  // namespace staticlm
