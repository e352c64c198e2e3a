// SPDX-License-Identifier: Apache-2.0
#include "fixture_reference.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace staticlm::testing {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_reference_json(const std::string& dir) {
  std::ifstream json_file(fs::path(dir) / "reference.json");
  if (!json_file) {
    return nlohmann::json();
  }
  const nlohmann::json doc = nlohmann::json::parse(json_file, nullptr, false);
  return doc.is_discarded() ? nlohmann::json() : doc;
}

std::vector<float> read_logits(const fs::path& path, size_t count) {
  std::vector<float> logits(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(logits.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) {
    logits.clear();
  }
  return logits;
}

// The checkpoint `checkpoint` (relative to `dir`) with dir's config.json, in a directory per
// process: tests of one build run in parallel.
std::string assemble_variant(const std::string& family, const std::string& dir, const std::string& checkpoint) {
  const fs::path out = fs::temp_directory_path() / ("staticlm_fixture_" + family + "_" + std::to_string(getpid()));
  std::error_code error;
  fs::remove_all(out, error);
  fs::create_directories(out, error);
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(dir) / checkpoint, error)) {
    const std::string name = entry.path().filename().string();
    if (name != "config.json" && name.rfind("reference", 0) != 0) {
      fs::copy_file(entry.path(), out / name, fs::copy_options::overwrite_existing, error);
    }
  }
  fs::copy_file(fs::path(dir) / "config.json", out / "config.json", fs::copy_options::overwrite_existing, error);
  return out.string();
}

}  // namespace

std::string fixture_dir(const std::string& family) {
  return (fs::path(STATICLM_SOURCE_DIR) / "tests" / "fixtures" / family).string();
}

FixtureReference load_fixture_reference(const std::string& family) {
  FixtureReference ref;
  ref.dir = fixture_dir(family);
  const nlohmann::json doc = read_reference_json(ref.dir);
  if (doc.is_null()) {
    return ref;
  }
  ref.prompt_tokens = doc["prompt_tokens"].get<std::vector<int32_t>>();
  ref.greedy_tokens = doc["greedy_tokens"].get<std::vector<int32_t>>();
  ref.vocab = doc["logits_shape"][1].get<int64_t>();
  ref.logits = read_logits(fs::path(ref.dir) / doc["logits_file"].get<std::string>(),
                           ref.prompt_tokens.size() * static_cast<size_t>(ref.vocab));
  if (doc.contains("checkpoint")) {
    ref.dir = assemble_variant(family, ref.dir, doc["checkpoint"].get<std::string>());
  }
  return ref;
}

std::vector<float> load_reference_logits(const std::string& family, const std::string& file_key, size_t rows) {
  const std::string dir = fixture_dir(family);
  const nlohmann::json doc = read_reference_json(dir);
  if (doc.is_null() || !doc.contains(file_key)) {
    return {};
  }
  return read_logits(fs::path(dir) / doc[file_key].get<std::string>(), rows * doc["logits_shape"][1].get<size_t>());
}

}  // namespace staticlm::testing
