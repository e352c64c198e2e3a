// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for NEON with dotprod (Armv8.2's sdot: Cortex-A55 / A76 and
// later, Neoverse N1 and later): sdot sums four signed byte products into each 32-bit lane, one
// instruction per word row where the plain NEON kernel (linear_q_neon.cpp) spends four; the
// integer sums, and so the results, are the same. Chunks take two rows per step: 16 integer
// accumulators beside a panel's 8 weight registers and the two rows' x words.
#include <arm_neon.h>

#include <cstring>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

// Everything the templates below use is included above, so nothing inline from the standard
// library is compiled for dotprod and merged into callers that run on any AArch64 CPU.
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"
#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"

namespace staticlm::cpu {
namespace {

struct NeonDot : simd::NeonIntBase {
  static constexpr int kQuantRows = 2;

  static IReg dot4(IReg acc, IReg w, XWord x) { return vdotq_s32(acc, signed_codes(w), x); }
  static IReg dot4_small(IReg acc, IReg w, XWord x) { return vdotq_s32(acc, vreinterpretq_s8_s32(w), x); }
};

}  // namespace

void linear_columns_q_dotprod(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  qtiles::quantized_columns<NeonDot>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
