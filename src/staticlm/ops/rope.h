// SPDX-License-Identifier: Apache-2.0
// Rotary position embedding parameters and inverse frequencies, as Hugging Face computes them
// (default, linear, llama3 and longrope scaling). Shared by every backend's rope kernel.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/ops/attributes.h"

namespace staticlm {

// kLongrope: each inverse frequency divided by its own factor (Phi-3's short or long factor list);
// its attention factor is not the op's (the exporter scales q and k after the rope).
enum class RopeScaling { kNone, kLinear, kLlama3, kLongrope };

struct RopeParams {
  double theta = 10000.0;
  int64_t rotary_dim = 0;  // leading channels of each head that rotate; the rest pass through
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 8192;
  std::vector<double> frequency_factors;  // longrope: rotary_dim / 2 values > 0

  // Reads the rope attributes of an op instance whose heads are head_dim wide. Longrope's factors
  // are the string attribute `frequency_factors`: rotary_dim / 2 decimal numbers joined by commas
  // (the program format has no list of floats).
  // Fails with InvalidArgument naming the bad attribute.
  static Result<RopeParams> from_attributes(const Attributes& attrs, int64_t head_dim);
  void to_attributes(Attributes& attrs) const;

  // rotary_dim / 2 inverse frequencies, in double precision.
  std::vector<double> inverse_frequencies() const;
};

std::string_view rope_scaling_name(RopeScaling scaling);

// cos and sin of position * inv_freq[i] for every i, computed in double and rounded to float: the
// angles every rope kernel rotates by, so backends agree on them exactly.
void rope_angles(std::span<const double> inv_freq, int64_t position, float* cos_out, float* sin_out);

}  // namespace staticlm
