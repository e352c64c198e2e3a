// SPDX-License-Identifier: Apache-2.0
// Model families: one file per Hugging Face architecture under models/, each in two steps as
// llama.cpp's per-architecture files are: `load` reads the hyper-parameters from the config and
// maps the checkpoint's tensors to named constants (a DecoderModel); `build` composes one
// method's graph from DecoderBuilder's helpers. The registry below is the single list of what
// export supports.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/exporter/decoder_model.h"
#include "staticlm/exporter/hf_config.h"
#include "staticlm/exporter/method_shape.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

struct FamilyOptions {
  DType weight_dtype = DType::kF32;  // matrices; 1-D weights (norms, biases) stay f32
  int64_t max_cache_len = 0;         // families with a sliding window check it against this
};

struct ModelFamily {
  std::string_view architecture;
  // The JSON defaults of the family's config class (HfConfigDefaults); empty: none needed.
  std::string_view config_defaults;
  // Reads hyper-parameters and maps tensors into `constants`. Errors name config.json or the
  // checkpoint directory and the key or tensor.
  Result<DecoderModel> (*load)(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                               ConstantTable& constants, const FamilyOptions& options);
  // One method's graph over `constants` (which holds the weights `model` names). Fails with
  // InvalidArgument when a weight's shape does not fit the hyper-parameters (naming the constant).
  Result<std::unique_ptr<Graph>> (*build)(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                          const DecoderMethodShape& shape);
};

std::span<const ModelFamily> model_families();

// The config defaults of the family of `architectures` (HfConfig::load's `defaults`).
std::string_view model_family_config_defaults(std::span<const std::string> architectures);

// The family for the config's architectures. Fails with Unimplemented listing the supported
// architectures.
Result<const ModelFamily*> find_model_family(const HfConfig& config);

// Shared by the family files: hyper-parameters every decoder reads the same way (dimensions, eps,
// rope), refusing mlp_bias, which no family implements.
Result<DecoderHyperParams> read_decoder_hyper_params(const HfConfig& config);

// Every layer attends the same way: scale 1 / sqrt(head_dim) and params.rope, as Llama's do.
std::vector<LayerAttention> uniform_attention(const DecoderHyperParams& params);

// Refuses an attention window smaller than the cache: the exported program attends over the
// whole cache, which would silently differ from the model.
Status check_sliding_window(const HfConfig& config, int64_t max_cache_len);

}  // namespace staticlm
