// SPDX-License-Identifier: Apache-2.0
// What this machine can do at best, measured in-process with the same thread pool the kernels
// use: the read bandwidth that bounds a decode step (weights streamed once per token) and the
// f32 multiply-add rate that bounds a prefill chunk. `staticlm bench` reports its results as
// fractions of these, measured in the same run, because on a shared machine an absolute time
// means little.
#pragma once

#include <cstddef>

#include "staticlm/core/cpu_features.h"
#include "staticlm/core/result.h"
#include "staticlm/core/thread_pool.h"

namespace staticlm::cpu {

// The best of `passes` timed reads of a `bytes` buffer (touched first, far larger than the last
// level cache for a meaningful number), split over the pool, with the widest loads the kernels
// issue under `allowed` (256-bit where an x86 CPU has AVX2, 128-bit on AArch64), in bytes per
// second. Fails with ResourceExhausted when the buffer cannot be allocated, InvalidArgument for
// zero sizes.
Result<double> measure_read_bandwidth(ThreadPool& pool, CpuFeatures allowed, size_t bytes, int passes);

// The best of `passes` timed runs of independent f32 fused multiply-adds on every thread of the
// pool, with the widest vectors `allowed` has (AVX-512 or AVX2 on x86, NEON's FMLA on AArch64,
// else scalar code), in flop/s (a multiply-add counts 2).
double measure_fma_peak(ThreadPool& pool, CpuFeatures allowed, int passes);

// How many times the f32 flop rate of independent 512-bit multiply-adds `vdpbf16ps` reaches on
// this thread (each instruction 32 products of bf16 pairs, summed into 16 f32 lanes). It differs
// by microarchitecture (some cores run vdpbf16ps at twice the f32 rate, others no faster), so it
// is measured, not assumed. The best of `passes` short runs of each. 0 where the CPU has no
// AVX-512 BF16 (and on every build without the x86 kernels).
double bf16_dot_speedup(int passes);

}  // namespace staticlm::cpu
