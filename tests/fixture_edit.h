// SPDX-License-Identifier: Apache-2.0
// Copies of fixture checkpoints for tests that edit them: the directory, its config.json.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace staticlm::testing {

// A copy of tests/fixtures/<family> in the test's temporary directory, for a test to edit.
inline std::string copy_fixture(const std::string& family, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::copy(std::filesystem::path(STATICLM_SOURCE_DIR) / "tests" / "fixtures" / family, dir);
  return dir.string();
}

// Rewrites dir/config.json through `edit`.
inline void edit_config(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
  const std::filesystem::path path = std::filesystem::path(dir) / "config.json";
  nlohmann::json config = nlohmann::json::parse(std::ifstream(path));
  edit(config);
  std::ofstream(path) << config.dump(2);
}

// copy_fixture(family, name), its config.json rewritten through `edit`.
inline std::string edited_fixture(const std::string& family, const std::string& name,
                                  const std::function<void(nlohmann::json&)>& edit) {
  const std::string dir = copy_fixture(family, name);
  edit_config(dir, edit);
  return dir;
}

}  // namespace staticlm::testing
