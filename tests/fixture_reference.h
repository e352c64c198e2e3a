// SPDX-License-Identifier: Apache-2.0
// Reads the PyTorch reference that scripts/make_fixtures.py wrote beside each fixture
// checkpoint (tests/fixtures/<family>/reference.json and its logits file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace staticlm::testing {

struct FixtureReference {
  std::string dir;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> greedy_tokens;
  int64_t vocab = 0;
  std::vector<float> logits;  // [prompt_tokens.size(), vocab]
};

std::string fixture_dir(const std::string& family);
// Aborts the calling test (via gtest ASSERTs in the caller) when the files are unreadable:
// returns an empty reference with dir set, which callers check.
FixtureReference load_fixture_reference(const std::string& family);

}  // namespace staticlm::testing
