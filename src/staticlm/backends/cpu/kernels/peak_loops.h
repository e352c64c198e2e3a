// SPDX-License-Identifier: Apache-2.0
// The loops bench's machine probes (machine_peaks.cpp) time, per architecture
// (x86/peak_loops_x86.cpp, arm/peak_loops_arm.cpp, generic/peak_loops_generic.cpp): chains of
// independent f32 multiply-adds in the widest vectors allowed, and a sum of words read as the
// kernels read weights. The plain C++ loops here serve where an architecture has nothing wider.
#pragma once

#include <cstddef>
#include <cstdint>

#include "staticlm/core/cpu_features.h"

namespace staticlm::cpu {

// Independent accumulators: more than latency x throughput on the cores measured, so the FMA
// units never wait. The loops over them are unrolled by pragma: at -O2 g++ would keep them in
// memory.
inline constexpr int kFmaChains = 12;

// Runs `steps` steps of kFmaChains multiply-add chains, returns the multiply-adds done (a vector
// multiply-add counts its lanes) and adds the chains' sum to *sink, so the work is not elided.
using FmaStepsFn = int64_t (*)(int64_t steps, float* sink);
// The sum of `count` words.
using SumWordsFn = uint64_t (*)(const uint64_t* data, size_t count);

int64_t fma_steps_scalar(int64_t steps, float* sink);
uint64_t sum_words_scalar(const uint64_t* data, size_t count);

// This architecture's widest multiply-add loop that `allowed` permits, and its read loop for a
// CPU with `host` (the scalar ones where it has nothing wider).
FmaStepsFn widest_fma_steps(CpuFeatures allowed);
SumWordsFn widest_sum_words(CpuFeatures host);

}  // namespace staticlm::cpu
