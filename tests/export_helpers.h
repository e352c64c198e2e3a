// SPDX-License-Identifier: Apache-2.0
// Shared by the integration tests that export fixtures: a temp path per name and the small
// export shape (prefill chunk 8, cache 64) that makes a 20-token prompt span several chunks.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/contract.h"

namespace staticlm::testing {

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

inline HfStaticExportOptions small_options(KvUpdateForm kv_update = KvUpdateForm::kInPlace) {
  HfStaticExportOptions options;
  options.prefill_len = 8;
  options.max_cache_len = 64;
  options.kv_update = kv_update;
  return options;
}

// Backend options as a user types them on the command line.
inline OptionMap text_options(std::initializer_list<std::pair<std::string, std::string>> entries) {
  OptionMap map;
  for (const auto& [key, value] : entries) map.emplace(key, RawOptionValue::text(value));
  return map;
}

// Feeds the first `prefilled` tokens through prefill (chunks of the program's prefill length,
// the last one partial and left-padded) and the rest through decode; returns the logits of
// every token, NaN where none arrived.
inline std::vector<float> feed_prompt(LlmSession& session, const std::vector<int32_t>& tokens, size_t prefilled) {
  const auto vocab = static_cast<size_t>(session.vocab_size());
  std::vector<float> logits(tokens.size() * vocab, std::nanf(""));
  auto sink_at = [&](size_t offset) {
    return [&, offset](int64_t index, std::span<const float> row) {
      std::copy(row.begin(), row.end(),
                logits.begin() + static_cast<std::ptrdiff_t>((offset + static_cast<size_t>(index)) * vocab));
    };
  };
  Status status = session.prefill(std::span(tokens).first(prefilled), sink_at(0));
  EXPECT_TRUE(status.ok()) << status.to_string();
  for (size_t i = prefilled; i < tokens.size(); ++i) {
    status = session.decode(tokens[i], sink_at(i));
    EXPECT_TRUE(status.ok()) << status.to_string();
  }
  return logits;
}

// Worst element-wise |actual - expected| / max(1, |expected|) must not exceed `relative`.
inline void expect_logits_near(std::span<const float> actual, std::span<const float> expected, double relative,
                               const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0.0;
  size_t worst_index = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]) /
                         std::max(1.0, std::abs(static_cast<double>(expected[i])));
    if (!(error <= worst)) {
      worst = std::isnan(error) ? INFINITY : error;
      worst_index = i;
    }
  }
  EXPECT_LE(worst, relative) << what << ": worst relative error at element " << worst_index << " (got "
                             << actual[worst_index] << ", reference " << expected[worst_index] << ")";
}

}  // namespace staticlm::testing
