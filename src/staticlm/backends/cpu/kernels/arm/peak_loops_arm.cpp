// SPDX-License-Identifier: Apache-2.0
// bench's machine probes on AArch64: FMLA chains in 128-bit NEON registers and the read loop with
// 128-bit loads (what the NEON kernels issue), the scalar loops where `isa` caps NEON away.
#include <arm_neon.h>

#include <cstdint>

#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/backends/cpu/kernels/peak_loops.h"

namespace staticlm::cpu {
namespace {

// Four 128-bit FMLA pipes (Neoverse V1 / V2, Apple's cores) with a latency of four cycles keep
// 16 independent chains in flight: fewer would measure the latency, not the peak.
constexpr int kNeonChains = 16;

int64_t fma_steps_neon(int64_t steps, float* sink) {
  float32x4_t acc[kNeonChains];
  for (int c = 0; c < kNeonChains; ++c) {
    acc[c] = vdupq_n_f32(static_cast<float>(c));
  }
  const float32x4_t a = vdupq_n_f32(0.999f);
  const float32x4_t b = vdupq_n_f32(1e-3f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kNeonChains; ++c) {
      acc[c] = vfmaq_f32(b, acc[c], a);  // acc * a + b, as the scalar chains
    }
  }
  float32x4_t total = acc[0];
  for (int c = 1; c < kNeonChains; ++c) {
    total = vaddq_f32(total, acc[c]);
  }
  *sink += vaddvq_f32(total);
  return steps * kNeonChains * 4;
}

// Four 128-bit loads in flight per step.
uint64_t sum_words_neon(const uint64_t* data, size_t count) {
  uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    s0 = vaddq_u64(s0, vld1q_u64(data + i));
    s1 = vaddq_u64(s1, vld1q_u64(data + i + 2));
    s2 = vaddq_u64(s2, vld1q_u64(data + i + 4));
    s3 = vaddq_u64(s3, vld1q_u64(data + i + 6));
  }
  uint64_t total = vaddvq_u64(vaddq_u64(vaddq_u64(s0, s1), vaddq_u64(s2, s3)));
  for (; i < count; ++i) {
    total += data[i];
  }
  return total;
}

}  // namespace

FmaStepsFn widest_fma_steps(CpuFeatures allowed) {
  return allowed.has(CpuFeature::kNeon) ? fma_steps_neon : fma_steps_scalar;
}

SumWordsFn widest_sum_words(CpuFeatures host) {
  return host.has(CpuFeature::kNeon) ? sum_words_neon : sum_words_scalar;
}

double bf16_dot_speedup(int /*passes*/) {
  return 0.0;  // no AVX-512 BF16 here
}

}  // namespace staticlm::cpu
