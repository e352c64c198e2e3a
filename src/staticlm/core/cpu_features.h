// SPDX-License-Identifier: Apache-2.0
// What the host CPU can run, detected once: the instruction-set features kernels are built for.
// Kernels declare the features they need (KernelRegistry picks the best one the CPU and the
// caller allow); a feature counts only when the OS saves its registers, so "has AVX-512" means
// the kernel may really use it.
#pragma once

#include <cstdint>
#include <span>
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
  kNeon = 1u << 4,         // Armv8 Advanced SIMD (Linux's asimd)
  kNeonDotProd = 1u << 5,  // sdot / udot (asimddp)
  kAmxBf16 = 1u << 6,      // AMX tiles with tdpbf16ps, usable: on Linux, this process was granted them
  kAmxInt8 = 1u << 7,      // AMX tiles with tdpbsud and the other int8 products, usable as kAmxBf16
  kAvxVnni = 1u << 8,      // AVX-VNNI: the VEX-encoded (256-bit) vpdpbusd, with kAvx2
  kNeonFp16 = 1u << 9,     // half-precision vector arithmetic (asimdhp)
  kNeonI8mm = 1u << 10,    // smmla / usmmla / usdot (i8mm)
  kNeonBf16 = 1u << 11,    // bfdot / bfmmla (bf16)
  kSve = 1u << 12,         // the Scalable Vector Extension
  kSve2 = 1u << 13,
  kSme = 1u << 14,  // the Scalable Matrix Extension
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

  // "avx2 avx512 avx512_vnni", "neon fp16 dotprod", or "none".
  std::string to_string() const;

 private:
  uint32_t bits_ = 0;
};

// Who made the host CPU: kernels tuned by measurement on one vendor's cores may choose by it
// where no feature tells the cores apart (the GEMV's weight streams per thread).
enum class CpuVendor { kIntel, kAmd, kOther };
CpuVendor cpu_vendor();

// The features Linux reports for an AArch64 CPU in its auxiliary vector (getauxval's AT_HWCAP and
// AT_HWCAP2; Android's too): what CpuFeatures::host() reads there, as a function of the two words
// so it can be checked on any machine. Every feature needs asimd (kNeon).
CpuFeatures cpu_features_from_arm_hwcaps(uint64_t hwcap, uint64_t hwcap2);

// One value of the cpu backend's "isa" runtime option: the widest feature set it lets kernels
// use (intersected with the host's).
struct IsaCap {
  std::string_view name;
  std::string_view doc;
  CpuFeatures most;
};

// The caps for this build's architecture, "auto" (everything the host has) first and "portable"
// (no SIMD kernels) last. x86-64: amx (AVX-512 and AMX's bf16 and int8 tiles), avx512 (with VNNI
// and BF16 where the CPU has them), avx2 (with AVX-VNNI where the CPU has it). AArch64: bf16
// (NEON with fp16, dotprod, i8mm and bf16, no SVE), i8mm (the same without bf16), dotprod (NEON
// with fp16 and dotprod), neon.
std::span<const IsaCap> isa_caps();

// The host's features capped at `isa`, one of isa_caps(). Fails with InvalidArgument listing the
// names, and saying so when `isa` names the other architecture's cap.
Result<CpuFeatures> cpu_features_for_isa(std::string_view isa);

}  // namespace staticlm
