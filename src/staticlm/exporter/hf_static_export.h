// SPDX-License-Identifier: Apache-2.0
// Exports a Hugging Face checkpoint directory as an hf_static v1 program (docs/hf_static_v1.md):
// a `prefill` and a `decode` method (and, on request, an `embeddings` method) sharing every weight, the contract
// metadata, and the tokenizer files embedded. Weights stream from the mapped checkpoint into the output file one tensor
// at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "staticlm/backends/api/backend.h"
#include "staticlm/core/result.h"
#include "staticlm/exporter/method_shape.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/partition/placement_report.h"

namespace staticlm {

struct HfStaticExportOptions {
  DType weight_dtype = DType::kF32;  // f32, f16 or bf16
  int64_t prefill_len = 64;
  int64_t max_cache_len = 0;        // 0: min(max_position_embeddings, 2048)
  DType cache_dtype = DType::kF32;  // f32, f16 or q8_0 (in-place updates, head_dim a multiple of 32)
  KvUpdateForm kv_update = KvUpdateForm::kInPlace;
  LogitsMode logits = LogitsMode::kAll;
  // "mean" or "last": add the embeddings method, whose metadata suggests that pooling; empty: none.
  std::string embedding_pooling;
  // A Jinja chat template to embed (as chat_template.jinja) instead of the checkpoint's own
  // chat_template.jinja; a template in tokenizer_config.json travels inside that file.
  std::string chat_template_path;
  // Export without a tokenizer (nor a chat template): the program takes token ids only. Otherwise a
  // checkpoint with neither tokenizer.json nor tokenizer.model is refused.
  bool no_tokenizer = false;
  std::function<void(const WriteProgress&)> on_progress;
  // Delegation (docs/backends.md): the backend to partition for (nullptr: every node runs on
  // the portable kernels; the caller keeps it alive), its options as the user gave them, and
  // whether a node the backend does not take is an error instead of a portable kernel call.
  const Backend* backend = nullptr;
  OptionMap backend_options;
  bool no_fallback = false;
};

struct HfStaticExportSummary {
  std::string architecture;
  std::vector<std::string> methods;
  int64_t prefill_len = 0;
  int64_t max_cache_len = 0;
  uint64_t file_bytes = 0;
  uint64_t constant_count = 0;
  uint64_t constant_bytes = 0;
  uint64_t named_data_count = 0;  // data the backend's delegates share (its weights, for cpu)
  uint64_t named_data_bytes = 0;
  std::vector<std::string> embedded_files;
  PlacementReport placement;                      // backend empty when the export had none
  std::vector<EffectiveOption> backend_settings;  // the backend's effective settings, given and defaulted
};

struct TokenizerFiles;

// Everything a program needs before it is written: the spec, and what its byte sources borrow
// from (the mapped checkpoint and tokenizer files). Lets callers adjust the spec (tests do)
// before writing it.
struct HfStaticBuild {
  HfStaticBuild();
  ~HfStaticBuild();
  HfStaticBuild(HfStaticBuild&&) noexcept;
  HfStaticBuild& operator=(HfStaticBuild&&) noexcept;

  ProgramSpec spec;
  HfStaticExportSummary summary;
  std::unique_ptr<SafetensorsCheckpoint> checkpoint;
  std::unique_ptr<TokenizerFiles> tokenizer;
};

// Reads, checks and builds the program without writing it. Errors as export_hf_static.
Result<HfStaticBuild> build_hf_static(const std::string& model_dir, const HfStaticExportOptions& options);

// Fails with InvalidArgument for bad options (naming the option), with the readers' and
// families' errors (naming the file and the key or tensor) for a bad checkpoint, and with the
// partitioner's errors (Partitioner::from_options / run) when a backend is given.
Result<HfStaticExportSummary> export_hf_static(const std::string& model_dir, const std::string& output_path,
                                               const HfStaticExportOptions& options);

}  // namespace staticlm
