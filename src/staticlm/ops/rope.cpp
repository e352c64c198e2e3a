// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/rope.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

namespace staticlm {
namespace {

constexpr std::string_view kFrequencyFactors = "frequency_factors";

// longrope's factors as the attribute holds them: shortest round-trip decimals joined by commas.
std::string join_factors(const std::vector<double>& factors) {
  std::string text;
  for (double factor : factors) {
    char buffer[32];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), factor);
    text += text.empty() ? "" : ",";
    text.append(buffer, error == std::errc() ? end : buffer);
  }
  return text;
}

Result<std::vector<double>> parse_factors(std::string_view text, int64_t count) {
  std::vector<double> factors;
  for (size_t begin = 0; begin <= text.size() && !text.empty();) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view piece = text.substr(begin, comma - begin);
    double factor = 0.0;
    const auto [end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), factor);
    if (error != std::errc() || end != piece.data() + piece.size() || !(factor > 0.0) || !std::isfinite(factor)) {
      return invalid_argument("attribute '", kFrequencyFactors, "': expected numbers > 0 joined by commas, found '",
                              piece, "' in '", text, "'");
    }
    factors.push_back(factor);
    begin = comma + 1;
  }
  if (static_cast<int64_t>(factors.size()) != count) {
    return invalid_argument("attribute '", kFrequencyFactors, "': expected ", count,
                            " factors (one per rotated channel pair), found ", factors.size());
  }
  return factors;
}

}  // namespace

std::string_view rope_scaling_name(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kLongrope: return "longrope";
  }
  return "none";
}

Result<RopeParams> RopeParams::from_attributes(const Attributes& attrs, int64_t head_dim) {
  RopeParams params;
  STATICLM_ASSIGN_OR_RETURN(params.theta, attrs.get_float("theta"));
  if (!(params.theta > 1.0) || !std::isfinite(params.theta)) {
    return invalid_argument("attribute 'theta': expected a finite value > 1, found ", params.theta);
  }
  STATICLM_ASSIGN_OR_RETURN(params.rotary_dim, attrs.get_int_or("rotary_dim", head_dim));
  if (params.rotary_dim <= 0 || params.rotary_dim > head_dim || params.rotary_dim % 2 != 0) {
    return invalid_argument("attribute 'rotary_dim': expected an even value in [2, ", head_dim, "], found ",
                            params.rotary_dim);
  }
  STATICLM_ASSIGN_OR_RETURN(std::string scaling, attrs.get_string_or("scaling", "none"));
  if (scaling == "none") {
    params.scaling = RopeScaling::kNone;
  } else if (scaling == "linear") {
    params.scaling = RopeScaling::kLinear;
  } else if (scaling == "llama3") {
    params.scaling = RopeScaling::kLlama3;
  } else if (scaling == "longrope") {
    params.scaling = RopeScaling::kLongrope;
  } else {
    return invalid_argument("attribute 'scaling': expected none, linear, llama3 or longrope, found '", scaling, "'");
  }
  STATICLM_ASSIGN_OR_RETURN(params.factor, attrs.get_float_or("factor", 1.0));
  STATICLM_ASSIGN_OR_RETURN(params.low_freq_factor, attrs.get_float_or("low_freq_factor", 1.0));
  STATICLM_ASSIGN_OR_RETURN(params.high_freq_factor, attrs.get_float_or("high_freq_factor", 4.0));
  STATICLM_ASSIGN_OR_RETURN(params.original_max_position, attrs.get_int_or("original_max_position", 8192));
  if (params.scaling == RopeScaling::kLongrope) {
    STATICLM_ASSIGN_OR_RETURN(std::string factors, attrs.get_string(kFrequencyFactors));
    STATICLM_ASSIGN_OR_RETURN(params.frequency_factors, parse_factors(factors, params.rotary_dim / 2));
  }
  if (params.scaling != RopeScaling::kNone && !(params.factor > 0.0)) {
    return invalid_argument("attribute 'factor': expected a value > 0, found ", params.factor);
  }
  if (params.scaling == RopeScaling::kLlama3) {
    if (!(params.high_freq_factor > params.low_freq_factor) || !(params.low_freq_factor > 0.0)) {
      return invalid_argument("llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, found ",
                              params.low_freq_factor, " and ", params.high_freq_factor);
    }
    if (params.original_max_position <= 0) {
      return invalid_argument("attribute 'original_max_position': expected a value > 0, found ",
                              params.original_max_position);
    }
  }
  return params;
}

void RopeParams::to_attributes(Attributes& attrs) const {
  attrs.set("theta", theta);
  attrs.set("rotary_dim", rotary_dim);
  attrs.set("scaling", std::string(rope_scaling_name(scaling)));
  if (scaling == RopeScaling::kLinear || scaling == RopeScaling::kLlama3) {
    attrs.set("factor", factor);
  }
  if (scaling == RopeScaling::kLlama3) {
    attrs.set("low_freq_factor", low_freq_factor);
    attrs.set("high_freq_factor", high_freq_factor);
    attrs.set("original_max_position", original_max_position);
  }
  if (scaling == RopeScaling::kLongrope) {
    attrs.set(std::string(kFrequencyFactors), join_factors(frequency_factors));
  }
}

void rope_angles(std::span<const double> inv_freq, int64_t position, float* cos_out, float* sin_out) {
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const double angle = static_cast<double>(position) * inv_freq[i];
    cos_out[i] = static_cast<float>(std::cos(angle));
    sin_out[i] = static_cast<float>(std::sin(angle));
  }
}

std::vector<double> RopeParams::inverse_frequencies() const {
  const int64_t half = rotary_dim / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[static_cast<size_t>(i)] =
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
  }
  if (scaling == RopeScaling::kLinear) {
    for (double& f : inv_freq) {
      f /= factor;
    }
  } else if (scaling == RopeScaling::kLongrope) {
    // transformers' _compute_longrope_parameters: 1 / (factor_i * theta^(2i / rotary_dim)).
    for (int64_t i = 0; i < half && static_cast<size_t>(i) < frequency_factors.size(); ++i) {
      inv_freq[static_cast<size_t>(i)] =
          1.0 / (frequency_factors[static_cast<size_t>(i)] *
                 std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim)));
    }
  } else if (scaling == RopeScaling::kLlama3) {
    // transformers' _compute_llama3_parameters: long wavelengths are slowed by `factor`,
    // short ones kept, and the band between is interpolated smoothly.
    const double low_freq_wavelen = static_cast<double>(original_max_position) / low_freq_factor;
    const double high_freq_wavelen = static_cast<double>(original_max_position) / high_freq_factor;
    for (double& f : inv_freq) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > low_freq_wavelen) {
        f /= factor;
      } else if (wavelen >= high_freq_wavelen) {
        const double smooth = (static_cast<double>(original_max_position) / wavelen - low_freq_factor) /
                              (high_freq_factor - low_freq_factor);
        f = (1.0 - smooth) * f / factor + smooth * f;
      }
    }
  }
  return inv_freq;
}

}  // namespace staticlm
