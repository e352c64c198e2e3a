// SPDX-License-Identifier: Apache-2.0
// Element-type tags for the per-ISA traits (x86/simd_avx512.h, x86/simd_avx2.h): V::load(F16{},
// p) widens eight or sixteen f16 values to f32, and so on. kGroup is how many consecutive k
// values a weight panel stores per 32-bit lane (ops/weight_layout.h). Declarations only, safe to
// include anywhere.
#pragma once

#include <cstdint>

namespace staticlm::cpu::tiles {

struct F32 {
  using Elem = float;
  static constexpr int kGroup = 1;
};
struct F16 {
  using Elem = uint16_t;
  static constexpr int kGroup = 1;
};
struct Bf16 {
  using Elem = uint16_t;
  static constexpr int kGroup = 2;
};

}  // namespace staticlm::cpu::tiles
