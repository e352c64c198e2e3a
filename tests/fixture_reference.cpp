// SPDX-License-Identifier: Apache-2.0
#include "fixture_reference.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace staticlm::testing {

std::string fixture_dir(const std::string& family) {
  return (std::filesystem::path(STATICLM_SOURCE_DIR) / "tests" / "fixtures" / family).string();
}

FixtureReference load_fixture_reference(const std::string& family) {
  FixtureReference ref;
  ref.dir = fixture_dir(family);
  std::ifstream json_file(std::filesystem::path(ref.dir) / "reference.json");
  if (!json_file) {
    return ref;
  }
  const nlohmann::json doc = nlohmann::json::parse(json_file, nullptr, false);
  if (doc.is_discarded()) {
    return ref;
  }
  ref.prompt_tokens = doc["prompt_tokens"].get<std::vector<int32_t>>();
  ref.greedy_tokens = doc["greedy_tokens"].get<std::vector<int32_t>>();
  ref.vocab = doc["logits_shape"][1].get<int64_t>();
  std::ifstream logits(std::filesystem::path(ref.dir) / doc["logits_file"].get<std::string>(), std::ios::binary);
  ref.logits.resize(ref.prompt_tokens.size() * static_cast<size_t>(ref.vocab));
  logits.read(reinterpret_cast<char*>(ref.logits.data()), static_cast<std::streamsize>(ref.logits.size() * 4));
  if (!logits) {
    ref.logits.clear();
  }
  return ref;
}

}  // namespace staticlm::testing
