// SPDX-License-Identifier: Apache-2.0
// bench's machine probes where the build has no native kernels: the plain C++ loops.
#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/backends/cpu/kernels/peak_loops.h"

namespace staticlm::cpu {

FmaStepsFn widest_fma_steps(CpuFeatures /*allowed*/) {
  return fma_steps_scalar;
}

SumWordsFn widest_sum_words(CpuFeatures /*host*/) {
  return sum_words_scalar;
}

double bf16_dot_speedup(int /*passes*/) {
  return 0.0;  // the probe needs the x86 kernels
}

}  // namespace staticlm::cpu
