// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/rope.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Straightforward recomputation of Hugging Face's inverse frequencies, kept independent of
// rope.cpp: base frequencies theta^(-2i/d) via exp/log, then the scaling rule as the
// transformers docs state it.
std::vector<double> reference_inverse_frequencies(const RopeParams& p) {
  std::vector<double> out;
  for (int64_t i = 0; 2 * i < p.rotary_dim; ++i) {
    const double exponent = static_cast<double>(2 * i) / static_cast<double>(p.rotary_dim);
    double f = std::exp(-exponent * std::log(p.theta));
    if (p.scaling == RopeScaling::kLinear) {
      f = f / p.factor;
    } else if (p.scaling == RopeScaling::kLongrope) {
      f = f / p.frequency_factors.at(static_cast<size_t>(i));
    } else if (p.scaling == RopeScaling::kLlama3) {
      const double orig = static_cast<double>(p.original_max_position);
      const double wavelen = 2 * kPi / f;
      if (wavelen > orig / p.low_freq_factor) {
        f = f / p.factor;
      } else if (wavelen < orig / p.high_freq_factor) {
        // unchanged
      } else {
        const double smooth = (orig / wavelen - p.low_freq_factor) / (p.high_freq_factor - p.low_freq_factor);
        f = (1 - smooth) * f / p.factor + smooth * f;
      }
    }
    out.push_back(f);
  }
  return out;
}

void expect_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-12 * std::abs(expected[i])) << "frequency " << i;
  }
}

Result<RopeParams> parse(const Attributes& attrs, int64_t head_dim = 8) {
  return RopeParams::from_attributes(attrs, head_dim);
}

void expect_refused(const Result<RopeParams>& result, std::string_view expected_piece) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find(expected_piece), std::string::npos)
      << "'" << expected_piece << "' not in: " << result.status().message();
}

TEST(RopeParamsTest, ParsesDefaults) {
  auto params = parse(Attributes{{"theta", int64_t{10000}}}, 64);
  ASSERT_TRUE(params.ok()) << params.status().to_string();
  EXPECT_DOUBLE_EQ(params->theta, 10000.0);
  EXPECT_EQ(params->rotary_dim, 64);
  EXPECT_EQ(params->scaling, RopeScaling::kNone);
  EXPECT_DOUBLE_EQ(params->factor, 1.0);
}

TEST(RopeParamsTest, ParsesLlama3Scaling) {
  auto params = parse(Attributes{{"theta", 500000.0},
                                 {"rotary_dim", int64_t{32}},
                                 {"scaling", std::string("llama3")},
                                 {"factor", 8.0},
                                 {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0},
                                 {"original_max_position", int64_t{8192}}},
                      64);
  ASSERT_TRUE(params.ok()) << params.status().to_string();
  EXPECT_EQ(params->scaling, RopeScaling::kLlama3);
  EXPECT_EQ(params->rotary_dim, 32);
  EXPECT_DOUBLE_EQ(params->factor, 8.0);
  EXPECT_EQ(params->original_max_position, 8192);
}

TEST(RopeParamsTest, RefusesBadAttributes) {
  expect_refused(parse({}), "missing attribute 'theta'");
  expect_refused(parse(Attributes{{"theta", std::string("1e4")}}), "attribute 'theta': expected float, found string");
  expect_refused(parse(Attributes{{"theta", 1.0}}), "attribute 'theta': expected a finite value > 1, found 1");
  expect_refused(parse(Attributes{{"theta", INFINITY}}), "attribute 'theta': expected a finite value > 1");
  expect_refused(parse(Attributes{{"theta", 1e4}, {"rotary_dim", int64_t{3}}}),
                 "attribute 'rotary_dim': expected an even value in [2, 8], found 3");
  expect_refused(parse(Attributes{{"theta", 1e4}, {"rotary_dim", int64_t{0}}}), "found 0");
  expect_refused(parse(Attributes{{"theta", 1e4}}, 7), "expected an even value in [2, 7], found 7");
  expect_refused(parse(Attributes{{"theta", 1e4}, {"scaling", std::string("yarn")}}),
                 "attribute 'scaling': expected none, linear, llama3 or longrope, found 'yarn'");
  expect_refused(parse(Attributes{{"theta", 1e4}, {"scaling", std::string("linear")}, {"factor", 0.0}}),
                 "attribute 'factor': expected a value > 0, found 0");
  expect_refused(parse(Attributes{{"theta", 1e4},
                                  {"scaling", std::string("llama3")},
                                  {"factor", 8.0},
                                  {"low_freq_factor", 4.0},
                                  {"high_freq_factor", 4.0}}),
                 "llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, found 4 and 4");
  expect_refused(
      parse(Attributes{
          {"theta", 1e4}, {"scaling", std::string("llama3")}, {"factor", 8.0}, {"original_max_position", int64_t{0}}}),
      "attribute 'original_max_position': expected a value > 0, found 0");
}

RopeParams llama3_params(double theta, int64_t rotary_dim, double factor, double low_freq_factor,
                         double high_freq_factor, int64_t original_max_position) {
  RopeParams params;
  params.theta = theta;
  params.rotary_dim = rotary_dim;
  params.scaling = RopeScaling::kLlama3;
  params.factor = factor;
  params.low_freq_factor = low_freq_factor;
  params.high_freq_factor = high_freq_factor;
  params.original_max_position = original_max_position;
  return params;
}

TEST(RopeParamsTest, AttributesRoundTrip) {
  const RopeParams params = llama3_params(500000.0, 16, 32.0, 2.0, 8.0, 4096);
  Attributes attrs;
  params.to_attributes(attrs);
  auto parsed = parse(attrs, 64);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_DOUBLE_EQ(parsed->theta, params.theta);
  EXPECT_EQ(parsed->rotary_dim, params.rotary_dim);
  EXPECT_EQ(parsed->scaling, params.scaling);
  EXPECT_DOUBLE_EQ(parsed->factor, params.factor);
  EXPECT_DOUBLE_EQ(parsed->low_freq_factor, params.low_freq_factor);
  EXPECT_DOUBLE_EQ(parsed->high_freq_factor, params.high_freq_factor);
  EXPECT_EQ(parsed->original_max_position, params.original_max_position);
  EXPECT_EQ(*attrs.get_string("scaling"), "llama3");
}

TEST(RopeParamsTest, ScalingNames) {
  EXPECT_EQ(rope_scaling_name(RopeScaling::kNone), "none");
  EXPECT_EQ(rope_scaling_name(RopeScaling::kLinear), "linear");
  EXPECT_EQ(rope_scaling_name(RopeScaling::kLlama3), "llama3");
  EXPECT_EQ(rope_scaling_name(RopeScaling::kLongrope), "longrope");
}

Attributes longrope_attributes(std::string factors, int64_t rotary_dim = 6) {
  return Attributes{{"theta", 10000.0},
                    {"rotary_dim", rotary_dim},
                    {"scaling", std::string("longrope")},
                    {"frequency_factors", std::move(factors)}};
}

TEST(RopeParamsTest, ParsesLongropeFactors) {
  auto params = parse(longrope_attributes("1,2.5,4"));
  ASSERT_TRUE(params.ok()) << params.status().to_string();
  EXPECT_EQ(params->scaling, RopeScaling::kLongrope);
  EXPECT_EQ(params->frequency_factors, (std::vector<double>{1.0, 2.5, 4.0}));
}

// Phi-4-mini's factors are written with more digits than a float keeps: the attribute must give
// back exactly the doubles the exporter read.
TEST(RopeParamsTest, LongropeFactorsRoundTripExactly) {
  RopeParams params;
  params.theta = 10000.0;
  params.rotary_dim = 6;
  params.scaling = RopeScaling::kLongrope;
  params.frequency_factors = {1.0, 1.118320672, 47.77};
  Attributes attrs;
  params.to_attributes(attrs);
  EXPECT_EQ(*attrs.get_string("frequency_factors"), "1,1.118320672,47.77");
  EXPECT_FALSE(attrs.has("factor"));
  auto parsed = parse(attrs);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->frequency_factors, params.frequency_factors);
}

TEST(RopeParamsTest, RefusesBadLongropeFactors) {
  expect_refused(parse(Attributes{{"theta", 1e4}, {"rotary_dim", int64_t{6}}, {"scaling", std::string("longrope")}}),
                 "missing attribute 'frequency_factors'");
  expect_refused(parse(longrope_attributes("1,2")),
                 "attribute 'frequency_factors': expected 3 factors (one per rotated channel pair), found 2");
  expect_refused(parse(longrope_attributes("1,2,4,8")), "expected 3 factors (one per rotated channel pair), found 4");
  expect_refused(parse(longrope_attributes("1,-2,4")),
                 "attribute 'frequency_factors': expected numbers > 0 joined by commas, found '-2' in '1,-2,4'");
  expect_refused(parse(longrope_attributes("1,2,4,")), "found '' in '1,2,4,'");
  expect_refused(parse(longrope_attributes("1, 2,4")), "found ' 2'");
  expect_refused(parse(longrope_attributes("1,inf,4")), "found 'inf'");
  expect_refused(parse(longrope_attributes("")), "expected 3 factors (one per rotated channel pair), found 0");
}

TEST(RopeInverseFrequenciesTest, Unscaled) {
  RopeParams params;
  params.theta = 10000.0;
  params.rotary_dim = 4;
  // theta^0 and theta^(-1/2), by hand.
  expect_close(params.inverse_frequencies(), {1.0, 0.01});
  params.rotary_dim = 128;
  expect_close(params.inverse_frequencies(), reference_inverse_frequencies(params));
}

TEST(RopeInverseFrequenciesTest, PartialRotaryDimUsesRotaryDimAsTheDenominator) {
  auto params = parse(Attributes{{"theta", 10000.0}, {"rotary_dim", int64_t{32}}}, 128);
  ASSERT_TRUE(params.ok());
  const std::vector<double> freqs = params->inverse_frequencies();
  ASSERT_EQ(freqs.size(), 16u);
  expect_close(freqs, reference_inverse_frequencies(*params));
  EXPECT_NEAR(freqs[8], std::pow(10000.0, -0.5), 1e-15);
}

TEST(RopeInverseFrequenciesTest, Linear) {
  RopeParams params;
  params.theta = 10000.0;
  params.rotary_dim = 64;
  params.scaling = RopeScaling::kLinear;
  params.factor = 4.0;
  expect_close(params.inverse_frequencies(), reference_inverse_frequencies(params));
  EXPECT_DOUBLE_EQ(params.inverse_frequencies()[0], 0.25);
}

TEST(RopeInverseFrequenciesTest, Llama3CoversAllThreeBands) {
  // Llama 3.1's published rope_scaling.
  const RopeParams params = llama3_params(500000.0, 128, 8.0, 1.0, 4.0, 8192);
  const std::vector<double> freqs = params.inverse_frequencies();
  expect_close(freqs, reference_inverse_frequencies(params));

  // The case must exercise every branch: kept, interpolated and slowed frequencies.
  int kept = 0;
  int interpolated = 0;
  int slowed = 0;
  for (size_t i = 0; i < freqs.size(); ++i) {
    const double base = std::exp(-(2.0 * static_cast<double>(i) / 128.0) * std::log(500000.0));
    if (std::abs(freqs[i] - base) <= 1e-12 * base) {
      ++kept;
    } else if (std::abs(freqs[i] - base / 8.0) <= 1e-12 * base) {
      ++slowed;
    } else {
      ++interpolated;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(interpolated, 0);
  EXPECT_GT(slowed, 0);
}

// transformers' _compute_longrope_parameters: each frequency divided by its own factor, the base
// frequencies over the rotary width (a partial one here).
TEST(RopeInverseFrequenciesTest, LongropeDividesEachFrequencyByItsFactor) {
  auto params = parse(longrope_attributes("1,2.5,4"), 8);
  ASSERT_TRUE(params.ok()) << params.status().to_string();
  const std::vector<double> freqs = params->inverse_frequencies();
  expect_close(freqs, reference_inverse_frequencies(*params));
  EXPECT_NEAR(freqs[0], 1.0, 1e-15);
  EXPECT_NEAR(freqs[1], std::pow(10000.0, -1.0 / 3.0) / 2.5, 1e-15);
}

TEST(RopeInverseFrequenciesTest, Llama3WithOtherFactors) {
  const RopeParams params = llama3_params(10000.0, 64, 32.0, 2.0, 16.0, 1024);
  expect_close(params.inverse_frequencies(), reference_inverse_frequencies(params));
}

}  // namespace
}  // namespace staticlm
