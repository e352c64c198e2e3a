// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for NEON with dotprod (Armv8.2's sdot: Cortex-A55 / A76 and
// later, Neoverse N1 and later): sdot sums four signed byte products into each 32-bit lane, one
// instruction per word row where the plain NEON kernel (linear_q_neon.cpp) spends four; the
// integer sums, and so the results, are the same (the traits: simd_neon_dot.h). A chunk of more
// than 32 rows copies each span of int8 groups once into the per-thread buffer with the top bits
// flipped (int4's are unpacked there anyway), so its sdot steps need no eor: with one per weight
// register, the 16 sdot and 8 eor of a step shared the vector pipes (0.61 of sdot's peak in
// llvm-mca's Neoverse N1 and V1 models, bench/neon_mca.py).
#include <arm_neon.h>

#include <cstring>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

// Everything the templates below use is included above, so nothing inline from the standard
// library is compiled for dotprod and merged into callers that run on any AArch64 CPU.
// Clang (the Android NDK's compiler) takes its own form of the same region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif

#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_dot.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"
#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"

namespace staticlm::cpu {
namespace {

using simd::NeonDot;

// Groups [first, last) of int8 panel `panel` into `scratch`, the scales as they are and the codes
// as signed bytes q (the stored q + 128 with the top bit flipped), whose sums carry no offset.
qtiles::GroupSpan flip_int8(const LinearOperands& op, const uint8_t* panel, int64_t first, int64_t last,
                            uint8_t* scratch) {
  const int64_t gbytes = qtiles::group_bytes(op);
  for (int64_t gi = first; gi < last; ++gi) {
    const uint8_t* group = panel + gi * gbytes;
    uint8_t* out = scratch + (gi - first) * gbytes;
    std::memcpy(out, group, qtiles::kScaleBytes);
    for (int64_t b = qtiles::kScaleBytes; b < gbytes; b += 64) {
      tiles::prefetch_lines<64>(reinterpret_cast<const char*>(group + b) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 4
      for (int i = 0; i < 64; i += 16) {
        vst1q_u8(out + b + i, veorq_u8(vld1q_u8(group + b + i), vdupq_n_u8(0x80)));
      }
    }
  }
  return {scratch, gbytes, first, last, 0};
}

// A chunk over panel p, a span of groups at a time in `scratch` (int8 flipped, int4 unpacked),
// read there by every block of rows with sdot alone (dot4_small).
void gemm_panel(const LinearOperands& op, int64_t p, uint8_t* scratch) {
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const int64_t groups = op.x_quantized->groups;
  const int64_t per_span = qtiles::unpack_span_groups(op);
  for (int64_t first = 0; first < groups; first += per_span) {
    const int64_t last = first + per_span < groups ? first + per_span : groups;
    const qtiles::GroupSpan span = op.codes == PanelCodes::kInt4
                                       ? qtiles::unpack_int4<NeonDot>(op, panel, first, last, scratch)
                                       : flip_int8(op, panel, first, last, scratch);
    qtiles::gemm_span<NeonDot, true>(op, span, p * kPanelColumns);
  }
}

}  // namespace

void linear_columns_q_dotprod(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  if (operands.rows <= qtiles::kStreamedQuantRows) {  // decode, and a few rows streaming the panels as stored
    qtiles::quantized_columns<NeonDot>(operands, n_begin, n_end, scratch);
    return;
  }
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  for (int64_t p = n_begin / kPanelColumns; p < p_end; ++p) {
    gemm_panel(operands, p, reinterpret_cast<uint8_t*>(scratch));
  }
}

}  // namespace staticlm::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
