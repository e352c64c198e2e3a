// Element-type tags for the per-ISA traits (simd_avx512.h, simd_avx2.h): V::load(F16{}, p) widens
// eight or sixteen f16 values to f32, and so on. Declarations only, safe to include anywhere.
#pragma once

#include <cstdint>

namespace staticlm::cpu::tiles {

struct F32 {
  using Elem = float;
};
struct F16 {
  using Elem = uint16_t;
};
struct Bf16 {
  using Elem = uint16_t;
};

}  // namespace staticlm::cpu::tiles
