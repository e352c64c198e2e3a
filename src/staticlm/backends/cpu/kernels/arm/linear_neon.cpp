// SPDX-License-Identifier: Apache-2.0
// The linear panels for NEON: 4 floats per register, a 32-column panel in eight; GEMM
// micro-kernels of 5 rows x 16 columns, two per panel (20 accumulators of the 32 registers); the
// GEMV streams two panels per thread (16 accumulators, one multiply-add chain each).
#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/linear_tiles.h"

namespace staticlm::cpu {

static_assert(simd::Neon::kPanelRows == kNeonFloatBlockRows);

void linear_columns_neon(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  tiles::linear_columns<simd::Neon, 2>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu
