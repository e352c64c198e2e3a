// The cpu backend's vectorized elementwise loops, per ISA (elementwise_avx512.cpp,
// elementwise_avx2.cpp): swiglu and the softmax's exponentials, both over a vector exp (a
// Cephes-style polynomial after range reduction: within 2 ulp of expf over the clamped range
// [-87.3, 88.3], which covers every float whose exp is a normal float).
#pragma once

#include <cstdint>

namespace staticlm::cpu {

struct ElementwiseFns {
  // out[i] = gate[i] / (1 + exp(-gate[i])) * up[i].
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t count) = nullptr;
  // x[i] = exp(x[i] - shift); returns the sum of the new values.
  float (*exp_shifted)(float* x, int64_t count, float shift) = nullptr;
};

// Only their addresses are taken before the CPU is known to have the set.
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t count);
float exp_shifted_avx512(float* x, int64_t count, float shift);
void swiglu_avx2(const float* gate, const float* up, float* out, int64_t count);
float exp_shifted_avx2(float* x, int64_t count, float shift);

}  // namespace staticlm::cpu
