// Each family's two steps (model_family.h), for the registry. Families whose blocks are Llama's
// with optional pieces (biases, per-head norms) load through load_llama_style and share Llama's
// graph.
#pragma once

#include "staticlm/exporter/model_family.h"

namespace staticlm {

// Which optional pieces a Llama-style family's blocks have.
struct LlamaStyleLayout {
  bool qkv_bias = false;        // biases on q/k/v projections
  bool o_bias = false;          // bias on the output projection
  bool qk_norm = false;         // per-head RMSNorm of queries and keys before RoPE
  bool sliding_window = false;  // the config may set an attention window (checked against the cache)
};

// Reads hyper-parameters (hidden_act must be silu), checks the window, maps the standard tensor
// names with the family's pieces switched on.
Result<DecoderModel> load_llama_style(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                      ConstantTable& constants, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout);

Result<DecoderModel> load_llama(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_qwen2(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_mistral(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_qwen3(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);

// Pre-norm blocks (RMSNorm, attention, residual; RMSNorm, SwiGLU MLP, residual), final RMSNorm, head.
Result<std::unique_ptr<Graph>> build_llama_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape);

}  // namespace staticlm
