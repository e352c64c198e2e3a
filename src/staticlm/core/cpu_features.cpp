#include "staticlm/core/cpu_features.h"

#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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
};

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID directly: clang's __builtin_cpu_supports does not know the name.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
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

Result<CpuFeatures> cpu_features_for_isa(std::string_view isa) {
  const CpuFeatures host = CpuFeatures::host();
  if (isa == "auto") {
    return host;
  }
  if (isa == "portable") {
    return CpuFeatures();
  }
  if (isa == "avx2") {
    return host.intersect(CpuFeatures().with(CpuFeature::kAvx2));
  }
  if (isa == "avx512") {
    return host.intersect(CpuFeatures()
                              .with(CpuFeature::kAvx2)
                              .with(CpuFeature::kAvx512)
                              .with(CpuFeature::kAvx512Vnni)
                              .with(CpuFeature::kAvx512Bf16));
  }
  return invalid_argument("isa '", isa, "': expected auto, avx512, avx2 or portable");
}

}  // namespace staticlm
