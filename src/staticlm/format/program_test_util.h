// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the format tests: a scratch directory, deterministic bytes, and a sample
// ProgramSpec that uses every part of the format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "staticlm/format/program_spec.h"

namespace staticlm::testing_util {

// A fresh directory under the test temp dir, removed on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Names of the entries in the directory, sorted.
  std::vector<std::string> entries() const;

 private:
  std::filesystem::path dir_;
};

// `count` bytes of a pattern that differs per seed.
std::vector<uint8_t> pattern_bytes(size_t count, uint32_t seed);

std::vector<uint8_t> read_file_bytes(const std::string& path);

// Metadata of every type, small and large constants of several dtypes, two methods (values of
// every storage kind, kernel calls with attributes of every type and an absent input, a
// delegate call), a delegate with compile specs, blob and output_order, and embedded files.
ProgramSpec sample_spec();

}  // namespace staticlm::testing_util
