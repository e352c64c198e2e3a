// SPDX-License-Identifier: Apache-2.0
// Shared by the per-family export tests (phi3, smollm3, granite, olmo2, sliding windows): the
// logits of a prompt through an export of a checkpoint directory, the metadata of an export, and
// refusals of edited configs, each one line naming the field, the value and what is supported.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_writer.h"

#include "export_helpers.h"
#include "fixture_edit.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm::testing {

// The logits of `tokens` through `dir`'s export with `options`: the first `prefilled` through
// prefill (chunks of options.prefill_len), the rest through decode. Empty when the export or the
// session fails (the test has failed then).
inline std::vector<float> exported_logits(const std::string& dir, const std::string& name,
                                          const HfStaticExportOptions& options, const std::vector<int32_t>& tokens,
                                          size_t prefilled) {
  const std::string path = temp_path(name + ".slm");
  auto summary = export_hf_static(dir, path, options);
  EXPECT_TRUE(summary.ok()) << summary.status().to_string();
  if (!summary.ok()) return {};
  auto opened = open_test_session(path);
  EXPECT_TRUE(opened.ok()) << opened.status().to_string();
  if (!opened.ok()) return {};
  return feed_prompt(*opened->session, tokens, prefilled);
}

// The program file of `dir`'s export with `options`.
inline std::unique_ptr<ProgramFile> exported_program(const std::string& dir, const std::string& name,
                                                     const HfStaticExportOptions& options = small_options()) {
  const std::string path = temp_path(name + ".slm");
  auto summary = export_hf_static(dir, path, options);
  EXPECT_TRUE(summary.ok()) << summary.status().to_string();
  if (!summary.ok()) return nullptr;
  auto file = ProgramFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  return file.ok() ? std::move(file).value() : nullptr;
}

// Opens `dir`'s export with metadata `key` set to `value`: the runner's validator must refuse what
// does not fit the program.
inline Status open_with_metadata(const std::string& dir, const std::string& name, std::string_view key,
                                 MetadataValue value, const HfStaticExportOptions& options = small_options()) {
  auto build = build_hf_static(dir, options);
  if (!build.ok()) return build.status();
  for (MetadataSpec& entry : build->spec.metadata) {
    if (entry.key == key) entry.value = value;
  }
  const std::string path = temp_path(name + ".slm");
  STATICLM_RETURN_IF_ERROR(write_program(build->spec, path).status());
  return open_test_session(path).status();
}

// The worst element-wise |a - b| / max(1, |b|).
inline double worst_relative_error(std::span<const float> a, std::span<const float> b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::abs(double{b[i]})));
  }
  return worst;
}

// bf16 weights (exact: the fixtures' checkpoints are bf16) and an f16 cache, which rounds keys and
// values to 11 significant bits: within 2e-2 of the reference, the bound hf_export_test holds
// llama3 to.
inline void expect_half_precision_close(const std::string& family) {
  const FixtureReference ref = load_fixture_reference(family);
  HfStaticExportOptions options = small_options();
  options.cache_dtype = DType::kF16;
  options.weight_dtype = DType::kBF16;
  expect_logits_near(exported_logits(ref.dir, family + "_half", options, ref.prompt_tokens, 12), ref.logits, 2e-2,
                     family + ": bf16 weights, f16 cache");
}

// A config edit the exporter must refuse with `code` and a message holding `message`.
struct Refusal {
  std::string name;
  std::function<void(nlohmann::json&)> edit;
  StatusCode code;
  std::string message;
};

// Exports a copy of `checkpoint_dir` with `refusal.edit` applied to its config.json.
inline void expect_refused(const std::string& checkpoint_dir, const Refusal& refusal) {
  const std::string name = "refused_" + std::filesystem::path(checkpoint_dir).filename().string() + "_" + refusal.name;
  const std::string dir = temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::copy(checkpoint_dir, dir);
  edit_config(dir, refusal.edit);
  const Status status = export_hf_static(dir, temp_path(name + ".slm"), small_options()).status();
  EXPECT_EQ(status.code(), refusal.code) << status.to_string();
  EXPECT_NE(status.message().find(refusal.message), std::string::npos) << status.message();
}

}  // namespace staticlm::testing
