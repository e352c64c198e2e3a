// SPDX-License-Identifier: Apache-2.0
// Rotary position embedding parameters and inverse frequencies, as Hugging Face computes them
// (default, linear and llama3 scaling). Shared by every backend's rope kernel.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/ops/attributes.h"

namespace staticlm {

enum class RopeScaling { kNone, kLinear, kLlama3 };

struct RopeParams {
  double theta = 10000.0;
  int64_t rotary_dim = 0;  // leading channels of each head that rotate; the rest pass through
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 8192;

  // Reads the rope attributes of an op instance whose heads are head_dim wide.
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
