// SPDX-License-Identifier: Apache-2.0
// The cpu backend's vectorized elementwise and row loops, per ISA (x86/elementwise_avx512.cpp,
// ...): the residual add, mul and scale, softcap's tanh, one row of rms_norm, rope's rotation of one head, and
// swiglu and the softmax's exponentials, both over a vector exp (a
// Cephes-style polynomial after range reduction: within 2 ulp of expf over the clamped range
// [-87.3, 88.3], which covers every float whose exp is a normal float).
#pragma once

#include <cstdint>

namespace staticlm::cpu {

struct ElementwiseFns {
  // out[i] = gate[i] / (1 + exp(-gate[i])) * up[i].
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t count) = nullptr;
  // out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU).
  void (*geglu)(const float* gate, const float* up, float* out, int64_t count) = nullptr;
  // out[i] = a[i] + b[i].
  void (*add)(const float* a, const float* b, float* out, int64_t count) = nullptr;
  // out[i] = a[i] * b[i].
  void (*mul)(const float* a, const float* b, float* out, int64_t count) = nullptr;
  // out[i] = x[i] * factor.
  void (*scale)(const float* x, float factor, float* out, int64_t count) = nullptr;
  // out[i] = cap * tanh(x[i] / cap); an infinite x gives ±cap, a NaN gives NaN (as std::tanh does).
  void (*softcap)(const float* x, float cap, float* out, int64_t count) = nullptr;
  // out[i] = x[i] * (1 / sqrt(sum(x^2) / width + eps)) * weight[i] over one row.
  void (*rms_norm)(const float* x, const float* weight, float* out, int64_t width, float eps) = nullptr;
  // Rotate-half over one head: out[i] = x[i] cos[i] - x[i + half] sin[i],
  // out[i + half] = x[i + half] cos[i] + x[i] sin[i], for i < half.
  void (*rotate_half)(const float* x, const float* cos, const float* sin, float* out, int64_t half) = nullptr;
};

// x[i] = exp(x[i] - shift), returning the sum of the new values: the vector exp that swiglu and
// the attention's softmax (attention_rows.h) use, one per ISA, exposed so its accuracy is tested.
using ExpShiftedFn = float (*)(float* x, int64_t count, float shift);

}  // namespace staticlm::cpu
