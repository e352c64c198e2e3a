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
    {CpuFeature::kNeon, "neon"},
    {CpuFeature::kNeonDotProd, "neon_dotprod"},
    {CpuFeature::kAmxBf16, "amx_bf16"},
    {CpuFeature::kAmxInt8, "amx_int8"},
    {CpuFeature::kAvxVnni, "avx_vnni"},
};

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
#elif defined(__aarch64__)
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

Result<CpuFeatures> cpu_features_for_isa(std::string_view isa) {
  const CpuFeatures host = CpuFeatures::host();
  if (isa == "auto") {
    return host;
  }
  if (isa == "portable") {
    return CpuFeatures();
  }
  const CpuFeatures avx2 = CpuFeatures().with(CpuFeature::kAvx2).with(CpuFeature::kAvxVnni);
  if (isa == "avx2") {
    return host.intersect(avx2);
  }
  const CpuFeatures avx512 = avx2.with(CpuFeature::kAvx512).with(CpuFeature::kAvx512Vnni).with(CpuFeature::kAvx512Bf16);
  if (isa == "avx512") {
    return host.intersect(avx512);
  }
  if (isa == "amx") {
    return host.intersect(avx512.with(CpuFeature::kAmxBf16).with(CpuFeature::kAmxInt8));
  }
  return invalid_argument("isa '", isa, "': expected auto, amx, avx512, avx2 or portable");
}

}  // namespace staticlm
