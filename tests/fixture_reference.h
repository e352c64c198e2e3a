// SPDX-License-Identifier: Apache-2.0
// Reads the PyTorch reference that scripts/make_fixtures.py wrote beside each fixture
// checkpoint (tests/fixtures/<family>/reference.json and its logits file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace staticlm::testing {

struct FixtureReference {
  std::string dir;  // the checkpoint: the fixture's directory, or for a variant a copy (below)
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> greedy_tokens;
  int64_t vocab = 0;
  std::vector<float> logits;  // [prompt_tokens.size(), vocab]
};

std::string fixture_dir(const std::string& family);
// Aborts the calling test (via gtest ASSERTs in the caller) when the files are unreadable:
// returns an empty reference with dir set, which callers check. A variant fixture (reference.json
// names another fixture's "checkpoint": a config.json and its reference only) is assembled into a
// directory of this process's own: the other fixture's files under the variant's config.json.
FixtureReference load_fixture_reference(const std::string& family);
// The first `rows` rows of another logits file of the fixture, the one reference.json names under
// `file_key` (phi3's "short_factor_logits_file"); empty when it cannot be read.
std::vector<float> load_reference_logits(const std::string& family, const std::string& file_key, size_t rows);

}  // namespace staticlm::testing
