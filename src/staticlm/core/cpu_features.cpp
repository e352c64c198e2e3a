// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/cpu_features.h"

#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <unistd.h>

#include <sys/syscall.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace staticlm {
namespace {

struct FeatureName {
  CpuFeature feature;
  std::string_view name;
};

constexpr FeatureName kNames[] = {
    {CpuFeature::kAvx2, "avx2"},
    {CpuFeature::kAvx512, "avx512"},
    {CpuFeature::kAvx512Vnni, "avx512_vnni"},
    {CpuFeature::kAvx512Bf16, "avx512_bf16"},
    {CpuFeature::kAmxBf16, "amx_bf16"},
    {CpuFeature::kAmxInt8, "amx_int8"},
    {CpuFeature::kAvxVnni, "avx_vnni"},
    {CpuFeature::kNeon, "neon"},
    {CpuFeature::kNeonFp16, "fp16"},
    {CpuFeature::kNeonDotProd, "dotprod"},
    {CpuFeature::kNeonI8mm, "i8mm"},
    {CpuFeature::kNeonBf16, "bf16"},
    {CpuFeature::kSve, "sve"},
    {CpuFeature::kSve2, "sve2"},
    {CpuFeature::kSme, "sme"},
};

// The AArch64 bits of Linux's auxiliary vector (arch/arm64/include/uapi/asm/hwcap.h), spelled out
// because older headers (and Android's) lack the newer ones.
constexpr uint64_t kHwcapAsimd = 1u << 1;
constexpr uint64_t kHwcapAsimdHp = 1u << 10;
constexpr uint64_t kHwcapAsimdDp = 1u << 20;
constexpr uint64_t kHwcapSve = 1u << 22;
constexpr uint64_t kHwcap2Sve2 = 1u << 1;
constexpr uint64_t kHwcap2I8mm = 1u << 13;
constexpr uint64_t kHwcap2Bf16 = 1u << 14;
constexpr uint64_t kHwcap2Sme = 1u << 23;

constexpr CpuFeatures kX86Avx2Cap = CpuFeatures().with(CpuFeature::kAvx2).with(CpuFeature::kAvxVnni);
constexpr CpuFeatures kX86Avx512Cap =
    kX86Avx2Cap.with(CpuFeature::kAvx512).with(CpuFeature::kAvx512Vnni).with(CpuFeature::kAvx512Bf16);
constexpr IsaCap kX86Caps[] = {
    {"auto", "everything this CPU has", CpuFeatures::all()},
    {"amx", "at most AVX-512 with AMX tiles (bf16 and int8 GEMMs)",
     kX86Avx512Cap.with(CpuFeature::kAmxBf16).with(CpuFeature::kAmxInt8)},
    {"avx512", "at most AVX-512 (with VNNI and BF16, without AMX)", kX86Avx512Cap},
    {"avx2", "at most AVX2 with FMA (and AVX-VNNI where the CPU has it)", kX86Avx2Cap},
    {"portable", "the portable reference kernels only", CpuFeatures()},
};

constexpr CpuFeatures kArmNeonCap = CpuFeatures().with(CpuFeature::kNeon);
constexpr CpuFeatures kArmDotProdCap = kArmNeonCap.with(CpuFeature::kNeonFp16).with(CpuFeature::kNeonDotProd);
constexpr IsaCap kArmCaps[] = {
    {"auto", "everything this CPU has", CpuFeatures::all()},
    {"bf16", "at most NEON with fp16, dotprod, i8mm and bf16 (no SVE)",
     kArmDotProdCap.with(CpuFeature::kNeonI8mm).with(CpuFeature::kNeonBf16)},
    {"i8mm", "at most NEON with fp16, dotprod and i8mm (no bf16, no SVE)", kArmDotProdCap.with(CpuFeature::kNeonI8mm)},
    {"dotprod", "at most NEON with fp16 and dotprod (Cortex-A76 class)", kArmDotProdCap},
    {"neon", "at most plain NEON (Armv8.0 Advanced SIMD: Cortex-A53 class)", kArmNeonCap},
    {"portable", "the portable reference kernels only", CpuFeatures()},
};

#if defined(__x86_64__) || defined(__i386__)
constexpr std::span<const IsaCap> kBuildCaps = kX86Caps;
constexpr std::string_view kBuildArch = "x86-64";
#elif defined(__aarch64__)
constexpr std::span<const IsaCap> kBuildCaps = kArmCaps;
constexpr std::string_view kBuildArch = "AArch64";
#else
constexpr IsaCap kOtherCaps[] = {
    {"auto", "everything this CPU has", CpuFeatures::all()},
    {"portable", "the portable reference kernels only", CpuFeatures()},
};
constexpr std::span<const IsaCap> kBuildCaps = kOtherCaps;
constexpr std::string_view kBuildArch = "this architecture";
#endif

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID directly: clang's __builtin_cpu_supports does not know the name.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

// CPUID 7.0:EDX bit `bit` (AMX-BF16 22, AMX-TILE 24, AMX-INT8 25).
bool cpuid7_edx(unsigned bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << bit)) != 0;
}

// AMX tiles usable by this process: the CPU has them (CPUID 7.0:EDX AMX-TILE), the OS saves
// their state (XCR0 bits 17 and 18; a VM may not expose it), and Linux grants this process the
// tile data (a dynamically enabled feature: without arch_prctl's grant the first tile
// instruction faults). The grant covers every thread of the process.
bool amx_tiles_usable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_OSXSAVE) == 0) {
    return false;
  }
  if (!cpuid7_edx(24)) {
    return false;
  }
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  constexpr unsigned kTileState = (1u << 17) | (1u << 18);  // XTILECFG, XTILEDATA
  if ((xcr0_low & kTileState) != kTileState) {
    return false;
  }
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// AVX-VNNI: CPUID 7.1:EAX bit 4 (its registers are AVX2's, whose OS support is checked already).
bool has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
}
#endif

CpuFeatures detect() {
  CpuFeatures features;
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's __builtin_cpu_supports also checks, through XGETBV, that the OS saves the vector
  // registers, so a feature reported here is usable.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c()) {
    features = features.with(CpuFeature::kAvx2);
    if (has_avx_vnni()) {
      features = features.with(CpuFeature::kAvxVnni);
    }
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    features = features.with(CpuFeature::kAvx512);
    if (__builtin_cpu_supports("avx512vnni")) {
      features = features.with(CpuFeature::kAvx512Vnni);
    }
    if (__builtin_cpu_supports("avx512bf16")) {
      features = features.with(CpuFeature::kAvx512Bf16);
    }
    const bool tiles = amx_tiles_usable();
    if (tiles && features.has(CpuFeature::kAvx512Bf16) && cpuid7_edx(22)) {
      features = features.with(CpuFeature::kAmxBf16);
    }
    if (tiles && features.has(CpuFeature::kAvx512Vnni) && cpuid7_edx(25)) {
      features = features.with(CpuFeature::kAmxInt8);
    }
  }
#elif defined(__aarch64__) && defined(__linux__)
  // Linux and Android put what the kernel lets user space run in the auxiliary vector (bionic has
  // getauxval too), so a feature the CPU has but the kernel hides is not reported.
  features = cpu_features_from_arm_hwcaps(getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
#elif defined(__aarch64__)
  // No auxiliary vector to ask: what the compiler was told every target CPU has.
  features = features.with(CpuFeature::kNeon);
#if defined(__ARM_FEATURE_DOTPROD)
  features = features.with(CpuFeature::kNeonDotProd);
#endif
#endif
  return features;
}

}  // namespace

CpuFeatures CpuFeatures::host() {
  static const CpuFeatures features = detect();
  return features;
}

std::string CpuFeatures::to_string() const {
  std::string out;
  for (const FeatureName& entry : kNames) {
    if (has(entry.feature)) {
      out += out.empty() ? "" : " ";
      out += entry.name;
    }
  }
  return out.empty() ? "none" : out;
}

CpuVendor cpu_vendor() {
#if defined(__x86_64__) || defined(__i386__)
  static const CpuVendor vendor = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) {
      return CpuVendor::kOther;
    }
    char name[12];
    std::memcpy(name, &ebx, 4);
    std::memcpy(name + 4, &edx, 4);
    std::memcpy(name + 8, &ecx, 4);
    const std::string_view id(name, sizeof(name));
    return id == "GenuineIntel" ? CpuVendor::kIntel : id == "AuthenticAMD" ? CpuVendor::kAmd : CpuVendor::kOther;
  }();
  return vendor;
#else
  return CpuVendor::kOther;
#endif
}

CpuFeatures cpu_features_from_arm_hwcaps(uint64_t hwcap, uint64_t hwcap2) {
  CpuFeatures features;
  if ((hwcap & kHwcapAsimd) == 0) {
    return features;
  }
  features = features.with(CpuFeature::kNeon);
  const struct {
    bool present;
    CpuFeature feature;
  } extensions[] = {
      {(hwcap & kHwcapAsimdHp) != 0, CpuFeature::kNeonFp16}, {(hwcap & kHwcapAsimdDp) != 0, CpuFeature::kNeonDotProd},
      {(hwcap2 & kHwcap2I8mm) != 0, CpuFeature::kNeonI8mm},  {(hwcap2 & kHwcap2Bf16) != 0, CpuFeature::kNeonBf16},
      {(hwcap & kHwcapSve) != 0, CpuFeature::kSve},          {(hwcap2 & kHwcap2Sve2) != 0, CpuFeature::kSve2},
      {(hwcap2 & kHwcap2Sme) != 0, CpuFeature::kSme},
  };
  for (const auto& extension : extensions) {
    if (extension.present) {
      features = features.with(extension.feature);
    }
  }
  return features;
}

std::span<const IsaCap> isa_caps() {
  return kBuildCaps;
}

Result<CpuFeatures> cpu_features_for_isa(std::string_view isa) {
  std::string names;
  for (size_t i = 0; i < kBuildCaps.size(); ++i) {
    const IsaCap& cap = kBuildCaps[i];
    if (cap.name == isa) {
      return CpuFeatures::host().intersect(cap.most);
    }
    names += std::string(i == 0 ? "" : i + 1 == kBuildCaps.size() ? " or " : ", ") + std::string(cap.name);
  }
  // A value of the other architecture's (a script written for another machine): say so.
  const std::span<const IsaCap> others =
      kBuildCaps.data() == kArmCaps ? std::span<const IsaCap>(kX86Caps) : std::span<const IsaCap>(kArmCaps);
  for (const IsaCap& cap : others) {
    if (cap.name == isa) {
      return invalid_argument("isa '", isa, "' is for ", others.data() == kArmCaps ? "AArch64" : "x86-64",
                              " CPUs; this build is for ", kBuildArch, ": expected ", names);
    }
  }
  return invalid_argument("isa '", isa, "': expected ", names);
}

}  // namespace staticlm
