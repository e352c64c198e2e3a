// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a checkpoint's config.json and generation_config.json. The input is both files,
// separated by a line "--generation_config.json--" (the second absent without it); they are
// written to a directory, as the exporter reads them, and loaded with the families' config
// defaults (so a Gemma architecture and a text_config reach the merging of defaults and sections).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "staticlm/exporter/hf_config.h"
#include "staticlm/exporter/model_family.h"

namespace {

const std::string& scratch_dir() {
  static const std::string* dir = [] {
    auto* path = new std::string(
        (std::filesystem::temp_directory_path() / ("staticlm_hf_config_fuzz_" + std::to_string(getpid()))).string());
    std::filesystem::create_directories(*path);
    return path;
  }();
  return *dir;
}

void write(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSeparator = "\n--generation_config.json--\n";
  const size_t split = input.find(kSeparator);
  const std::string dir = scratch_dir();
  write(dir + "/config.json", input.substr(0, split));
  const std::string generation = dir + "/generation_config.json";
  if (split == std::string_view::npos) {
    std::filesystem::remove(generation);
  } else {
    write(generation, input.substr(split + kSeparator.size()));
  }
  auto config = staticlm::HfConfig::load(dir, staticlm::model_family_config_defaults);
  if (config.ok()) {
    (void)config->rope_params(config->max_position_embeddings);
    (void)config->effective_sliding_window();
    (void)config->rope_attention_factor();
  }
  return 0;
}
