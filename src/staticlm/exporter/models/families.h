// SPDX-License-Identifier: Apache-2.0
// Each family's two steps (model_family.h), for the registry. Families whose blocks are Llama's
// with optional pieces (biases, per-head norms, windows, multipliers) load through
// load_llama_style (or read_llama_style and their own tensor names) and share Llama's graph.
#pragma once

#include <string_view>
#include <vector>

#include "staticlm/exporter/model_family.h"

namespace staticlm {

// Which optional pieces a Llama-style family's blocks have.
struct LlamaStyleLayout {
  bool qkv_bias = false;  // biases on q/k/v projections
  bool o_bias = false;    // bias on the output projection
  bool qk_norm = false;   // per-head RMSNorm of queries and keys before RoPE
  // Which layers slide over the config's window where it has no layer_types (layer_windows);
  // nullptr: the family has no sliding window.
  std::vector<bool> (*sliding_layers)(const HfConfig& config) = nullptr;
};

// Every layer (Mistral, Phi-3).
std::vector<bool> every_layer(const HfConfig& config);
// The layers from max_window_layers on (Qwen2Config's and Qwen3Config's rule).
std::vector<bool> layers_from_max_window_layers(const HfConfig& config);

// Reads hyper-parameters (hidden_act must be silu) and how each layer attends (Llama's scale and
// rope, the windows `layout` says); maps no tensor.
Result<DecoderModel> read_llama_style(const HfConfig& config, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout);
// read_llama_style, then the standard tensor names with the family's pieces switched on.
Result<DecoderModel> load_llama_style(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                      ConstantTable& constants, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout);

Result<DecoderModel> load_llama(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_qwen2(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_mistral(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_qwen3(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_phi3(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_smollm3(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_granite(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);

// Pre-norm blocks (RMSNorm, attention, residual; RMSNorm, SwiGLU MLP, residual), final RMSNorm, head;
// the embeddings, the blocks' outputs and the logits scaled where the model has those constants.
Result<std::unique_ptr<Graph>> build_llama_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape);

// OLMo 2 (olmo2.cpp): norms after attention and the MLP only, q / k norms over the whole projection.
Result<DecoderModel> load_olmo2(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
// Per layer attention, RMSNorm, residual; SwiGLU MLP, RMSNorm, residual; final RMSNorm, head.
Result<std::unique_ptr<Graph>> build_olmo2_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape);

// The defaults of the config classes of the families below for keys a config.json may leave out.
extern const std::string_view kQwen2ConfigDefaults;  // Qwen2Config's and Qwen3Config's
extern const std::string_view kMistralConfigDefaults;
extern const std::string_view kPhi3ConfigDefaults;
extern const std::string_view kSmolLM3ConfigDefaults;
extern const std::string_view kGraniteConfigDefaults;
extern const std::string_view kOlmo2ConfigDefaults;

// Gemma 2 and 3 (gemma.cpp): scaled embeddings, (1 + w) RMSNorms (folded into the weights), norms
// before and after attention and the MLP, GeGLU, per-layer windows, ropes and soft-caps.

// How Gemma's layers score: scale query_pre_attn_scalar^-0.5, soft-cap attn_logit_softcapping.
LayerAttention gemma_scores(const HfConfig& config);

// Which layers use the sliding window: layer_types where the config has them, else every
// `pattern`-th layer (1-based) is global and the others slide. Fails with Unimplemented naming a
// layer type other than sliding_attention and full_attention.
Result<std::vector<bool>> gemma_sliding_layers(const HfConfig& config, int64_t pattern);

// Reads what Gemma 2 and 3 share and maps their tensors (q_norm / k_norm where `qk_norm`), from
// "model." or, in a multimodal checkpoint, its language model's prefix. `attention` says how each
// layer attends.
Result<DecoderModel> load_gemma(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options,
                                std::vector<LayerAttention> attention, bool qk_norm);

// Scaled embeddings; per layer RMSNorm, attention, RMSNorm, residual; RMSNorm, gated MLP, RMSNorm,
// residual; final RMSNorm, head, its soft-cap.
Result<std::unique_ptr<Graph>> build_gemma_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape);

Result<DecoderModel> load_gemma2(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_gemma3(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);

// The defaults of transformers' Gemma2Config and Gemma3TextConfig for keys a config.json may
// leave out (a Gemma3ForConditionalGeneration's text_config holds only what differs from them).
extern const std::string_view kGemma2ConfigDefaults;
extern const std::string_view kGemma3TextConfigDefaults;

}  // namespace staticlm
