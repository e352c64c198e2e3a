// SPDX-License-Identifier: Apache-2.0
// bench's machine probes on x86: multiply-add chains in 512-bit (AVX-512) or 256-bit (AVX2)
// registers, vdpbf16ps chains for the bf16 probe, and the read loop with 256-bit loads, each
// compiled for its set by a target attribute and run only where the CPU has it.
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics
// (_mm512_cvtph_ps, _mm512_reduce_add_ps) are uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/backends/cpu/kernels/peak_loops.h"

namespace staticlm::cpu {
namespace {

// Each is a FmaStepsFn (peak_loops.h).
__attribute__((target("avx512f"))) int64_t fma_steps_avx512(int64_t steps, float* sink) {
  __m512 acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) {
    acc[c] = _mm512_set1_ps(static_cast<float>(c));
  }
  const __m512 a = _mm512_set1_ps(0.999f);
  const __m512 b = _mm512_set1_ps(1e-3f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kFmaChains; ++c) {
      acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
  }
  __m512 total = acc[0];
  for (int c = 1; c < kFmaChains; ++c) {
    total = _mm512_add_ps(total, acc[c]);
  }
  *sink += _mm512_reduce_add_ps(total);
  return steps * kFmaChains * 16;
}

// The same chains of vdpbf16ps: each step 32 pair products per register (64 flops).
__attribute__((target("avx512f,avx512bf16"))) int64_t bf16_dot_steps(int64_t steps, float* sink) {
  __m512 acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) {
    acc[c] = _mm512_set1_ps(static_cast<float>(c));
  }
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // a pair of bf16 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x3a833a83);  // a pair of bf16 ~1e-3
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kFmaChains; ++c) {
      acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    }
  }
  __m512 total = acc[0];
  for (int c = 1; c < kFmaChains; ++c) {
    total = _mm512_add_ps(total, acc[c]);
  }
  *sink += _mm512_reduce_add_ps(total);
  return steps * kFmaChains * 32;
}

__attribute__((target("avx2,fma"))) int64_t fma_steps_avx2(int64_t steps, float* sink) {
  __m256 acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) {
    acc[c] = _mm256_set1_ps(static_cast<float>(c));
  }
  const __m256 a = _mm256_set1_ps(0.999f);
  const __m256 b = _mm256_set1_ps(1e-3f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kFmaChains; ++c) {
      acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
  }
  __m256 total = acc[0];
  for (int c = 1; c < kFmaChains; ++c) {
    total = _mm256_add_ps(total, acc[c]);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  for (float lane : lanes) {
    *sink += lane;
  }
  return steps * kFmaChains * 8;
}

// The same with 256-bit loads, four in flight per step: the way the GEMV reads its weights, so
// the roofline is what such a loop can reach (the plain loop above may read slower).
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* data, size_t count) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i)));
    s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 4)));
    s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 8)));
    s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
  uint64_t total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < count; ++i) {
    total += data[i];
  }
  return total;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

FmaStepsFn widest_fma_steps(CpuFeatures allowed) {
  if (allowed.has(CpuFeature::kAvx512)) {
    return fma_steps_avx512;
  }
  return allowed.has(CpuFeature::kAvx2) ? fma_steps_avx2 : fma_steps_scalar;
}

SumWordsFn widest_sum_words(CpuFeatures host) {
  return host.has(CpuFeature::kAvx2) ? sum_words_avx2 : sum_words_scalar;
}

double bf16_dot_speedup(int passes) {
  if (!CpuFeatures::host().covers(CpuFeatures().with(CpuFeature::kAvx512).with(CpuFeature::kAvx512Bf16))) {
    return 0.0;
  }
  constexpr int64_t kSteps = 1 << 13;
  auto best_rate = [&](int64_t (*steps_fn)(int64_t, float*)) {
    double best = 0.0;
    float sink = 0.0f;
    for (int pass = 0; pass < std::max(1, passes); ++pass) {
      const auto start = std::chrono::steady_clock::now();
      const int64_t products = steps_fn(kSteps, &sink);
      best = std::max(best, static_cast<double>(products) / seconds_since(start));
    }
    // The sum is finite: the comparison keeps it (and the work) alive.
    return sink > -1.0f ? best : 0.0;
  };
  const double fma = best_rate(fma_steps_avx512);
  const double dot = best_rate(bf16_dot_steps);
  return fma > 0.0 ? dot / fma : 0.0;
}

}  // namespace staticlm::cpu
