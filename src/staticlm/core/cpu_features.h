// What the host CPU can run, detected once: the instruction-set features kernels are built for.
// Kernels declare the features they need (KernelRegistry picks the best one the CPU and the
// caller allow); a feature counts only when the OS saves its registers, so "has AVX-512" means
// the kernel may really use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "staticlm/core/result.h"

namespace staticlm {

// One bit per feature; a kernel's requirement is the OR of the bits it needs.
enum class CpuFeature : uint32_t {
  kAvx2 = 1u << 0,         // with FMA and F16C
  kAvx512 = 1u << 1,       // F, BW, VL, DQ
  kAvx512Vnni = 1u << 2,   // vpdpbusd
  kAvx512Bf16 = 1u << 3,   // vdpbf16ps
  kNeon = 1u << 4,         // Armv8 Advanced SIMD
  kNeonDotProd = 1u << 5,  // sdot / udot
  kAmxBf16 = 1u << 6,      // AMX tiles with tdpbf16ps, usable: on Linux, this process was granted them
  kAmxInt8 = 1u << 7,      // AMX tiles with tdpbsud and the other int8 products, usable as kAmxBf16
  kAvxVnni = 1u << 8,      // AVX-VNNI: the VEX-encoded (256-bit) vpdpbusd, with kAvx2
};

class CpuFeatures {
 public:
  constexpr CpuFeatures() = default;
  constexpr explicit CpuFeatures(uint32_t bits) : bits_(bits) {}

  // What this machine supports (detected on first use; cheap afterwards).
  static CpuFeatures host();
  // Every feature: a caller cap that restricts nothing.
  static constexpr CpuFeatures all() { return CpuFeatures(~0u); }

  constexpr bool has(CpuFeature feature) const { return (bits_ & static_cast<uint32_t>(feature)) != 0; }
  // True when every feature of `required` is here.
  constexpr bool covers(CpuFeatures required) const { return (bits_ & required.bits_) == required.bits_; }
  constexpr CpuFeatures with(CpuFeature feature) const { return CpuFeatures(bits_ | static_cast<uint32_t>(feature)); }
  constexpr CpuFeatures without(CpuFeature feature) const {
    return CpuFeatures(bits_ & ~static_cast<uint32_t>(feature));
  }
  constexpr CpuFeatures intersect(CpuFeatures other) const { return CpuFeatures(bits_ & other.bits_); }
  constexpr uint32_t bits() const { return bits_; }
  constexpr bool operator==(const CpuFeatures&) const = default;

  // "avx2 avx512 avx512_vnni", or "none".
  std::string to_string() const;

 private:
  uint32_t bits_ = 0;
};

// Who made the host CPU: kernels tuned by measurement on one vendor's cores may choose by it
// where no feature tells the cores apart (the GEMV's weight streams per thread).
enum class CpuVendor { kIntel, kAmd, kOther };
CpuVendor cpu_vendor();

// The feature sets a user can cap kernels at ("isa" runtime option of the cpu backend):
// "portable" (no SIMD kernels), "avx2" (with AVX-VNNI where the CPU has it), "avx512" (with
// VNNI and BF16 where the CPU has them), "amx" (AVX-512 and AMX's bf16 and int8 tiles), "auto"
// (everything the host has). Fails with InvalidArgument listing the names.
Result<CpuFeatures> cpu_features_for_isa(std::string_view isa);

}  // namespace staticlm
