// Shared by the integration tests that export fixtures: a temp path per name and the small
// export shape (prefill chunk 8, cache 64) that makes a 20-token prompt span several chunks.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/exporter/hf_static_export.h"

namespace staticlm::testing {

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

inline HfStaticExportOptions small_options() {
  HfStaticExportOptions options;
  options.prefill_len = 8;
  options.max_cache_len = 64;
  return options;
}

}  // namespace staticlm::testing
