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
  int64_t max_cache_len = 0;         // the longest sequence the program runs (longrope's factor set)
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
// rope for a program of options.max_cache_len positions), refusing mlp_bias, which no family
// implements.
Result<DecoderHyperParams> read_decoder_hyper_params(const HfConfig& config, const FamilyOptions& options);

// Every layer attends the same way: scale 1 / sqrt(head_dim) and params.rope with its attention
// factor, as Llama's do.
std::vector<LayerAttention> uniform_attention(const DecoderHyperParams& params);

// layer_types as one flag per layer, true for sliding_attention; empty when the config has none.
// Fails with Unimplemented naming an entry other than sliding_attention and full_attention.
Result<std::vector<bool>> sliding_layer_types(const HfConfig& config);

// Each layer's attention window (0: none): the window the model uses
// (HfConfig::effective_sliding_window) on the layers layer_types marks sliding, or, without
// layer_types, on those `slides_by_default` marks (one flag per layer). Fails as
// sliding_layer_types.
Result<std::vector<int64_t>> layer_windows(const HfConfig& config, const std::vector<bool>& slides_by_default);

// Whether multiplying an f32 weight by `value` is exact (a power of two, 2^-64 to 2^64), so a
// multiplier folded into the weight changes no bit of what transformers computes.
bool is_exact_scale(double value);

}  // namespace staticlm
