// SPDX-License-Identifier: Apache-2.0
// Test helpers for the checkpoint readers: a scratch model directory and raw file writing.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace staticlm::testing_files {

// A fresh directory under the test temp dir, removed (with its files) when the object dies.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "staticlm_readers_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return (std::filesystem::path(path_) / name).string(); }

  void write(std::string_view name, std::string_view contents) const {
    std::ofstream out(file(name), std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    ASSERT_TRUE(out.good()) << "cannot write " << file(name);
  }

 private:
  std::string path_;
};

}  // namespace staticlm::testing_files
