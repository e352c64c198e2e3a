// The cpu backend's vectorized elementwise and row loops, per ISA (elementwise_avx512.cpp,
// elementwise_avx2.cpp): the residual add, one row of rms_norm, rope's rotation of one head, and
// swiglu and the softmax's exponentials, both over a vector exp (a
// Cephes-style polynomial after range reduction: within 2 ulp of expf over the clamped range
// [-87.3, 88.3], which covers every float whose exp is a normal float).
#pragma once

#include <cstdint>

namespace staticlm::cpu {

struct ElementwiseFns {
  // out[i] = gate[i] / (1 + exp(-gate[i])) * up[i].
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t count) = nullptr;
  // out[i] = a[i] + b[i].
  void (*add)(const float* a, const float* b, float* out, int64_t count) = nullptr;
  // out[i] = x[i] * (1 / sqrt(sum(x^2) / width + eps)) * weight[i] over one row.
  void (*rms_norm)(const float* x, const float* weight, float* out, int64_t width, float eps) = nullptr;
  // Rotate-half over one head: out[i] = x[i] cos[i] - x[i + half] sin[i],
  // out[i + half] = x[i + half] cos[i] + x[i] sin[i], for i < half.
  void (*rotate_half)(const float* x, const float* cos, const float* sin, float* out, int64_t half) = nullptr;
};

// x[i] = exp(x[i] - shift), returning the sum of the new values: the vector exp that swiglu and
// the attention's softmax (attention_rows.h) use, exposed so its accuracy is tested.
float exp_shifted_avx512(float* x, int64_t count, float shift);
float exp_shifted_avx2(float* x, int64_t count, float shift);

// Only their addresses are taken before the CPU is known to have the set.
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t count);
void add_avx512(const float* a, const float* b, float* out, int64_t count);
void rms_norm_avx512(const float* x, const float* weight, float* out, int64_t width, float eps);
void rotate_half_avx512(const float* x, const float* cos, const float* sin, float* out, int64_t half);
void swiglu_avx2(const float* gate, const float* up, float* out, int64_t count);
void add_avx2(const float* a, const float* b, float* out, int64_t count);
void rms_norm_avx2(const float* x, const float* weight, float* out, int64_t width, float eps);
void rotate_half_avx2(const float* x, const float* cos, const float* sin, float* out, int64_t half);

// Every loop of one instruction set.
inline constexpr ElementwiseFns kElementwiseAvx512{swiglu_avx512, add_avx512, rms_norm_avx512, rotate_half_avx512};
inline constexpr ElementwiseFns kElementwiseAvx2{swiglu_avx2, add_avx2, rms_norm_avx2, rotate_half_avx2};

}  // namespace staticlm::cpu
