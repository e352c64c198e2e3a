// SPDX-License-Identifier: Apache-2.0
// What a model family reads from a checkpoint: the decoder's hyper-parameters, how each layer
// attends, and the constants holding its weights. A family's loader fills a DecoderModel; its
// graph builder composes the method graph from it with DecoderBuilder's helpers.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "staticlm/graph/graph.h"
#include "staticlm/ops/rope.h"

namespace staticlm {

struct DecoderHyperParams {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  double rms_norm_eps = 1e-6;
  // The rope of the layers that attend over the whole cache: what hf_static's rope_* metadata
  // keys describe.
  RopeParams rope;
  // longrope's attention factor (HfConfig::rope_attention_factor), 1 for the other scalings.
  double rope_attention_factor = 1.0;
};

// How one layer attends.
struct LayerAttention {
  double scale = 1.0;              // of the scores q . k
  std::optional<RopeParams> rope;  // empty: the layer's queries and keys are not rotated
  int64_t window = 0;              // > 0: a query attends its own slot and the window - 1 before it
  double softcap = 0.0;            // > 0: scores become softcap * tanh(score / softcap)
  // != 1: the rotated channels of q and k are multiplied by it after the rope (longrope's attention
  // factor, which transformers folds into cos and sin).
  double rope_attention_factor = 1.0;
};

// The activation of a gated MLP's gate: down(act(gate) * up).
enum class Activation { kSilu, kGelu, kGeluTanh };

inline constexpr ConstantId kNoConstant = -1;

// What q_norm / k_norm normalize: each head's head_dim channels (Qwen3, Gemma 3) or the whole
// projection before it is split into heads (OLMo 2).
enum class QkNormScope { kPerHead, kWholeProjection };

struct DecoderLayerWeights {
  ConstantId input_norm = kNoConstant;
  ConstantId q_proj = kNoConstant;
  ConstantId k_proj = kNoConstant;
  ConstantId v_proj = kNoConstant;
  ConstantId o_proj = kNoConstant;
  ConstantId q_bias = kNoConstant;  // Qwen2
  ConstantId k_bias = kNoConstant;
  ConstantId v_bias = kNoConstant;
  ConstantId o_bias = kNoConstant;
  ConstantId q_norm = kNoConstant;  // Qwen3: RMSNorm over head_dim before RoPE
  ConstantId k_norm = kNoConstant;
  QkNormScope qk_norm_scope = QkNormScope::kPerHead;
  ConstantId post_attention_norm = kNoConstant;    // Llama: before the MLP; Gemma, OLMo 2: on attention's output
  ConstantId pre_feedforward_norm = kNoConstant;   // Gemma
  ConstantId post_feedforward_norm = kNoConstant;  // Gemma, OLMo 2
  ConstantId gate_proj = kNoConstant;
  ConstantId up_proj = kNoConstant;
  ConstantId down_proj = kNoConstant;
};

struct DecoderWeights {
  ConstantId embed_tokens = kNoConstant;
  ConstantId final_norm = kNoConstant;
  ConstantId lm_head = kNoConstant;          // equals embed_tokens when the embeddings are tied
  ConstantId embedding_scale = kNoConstant;  // f32 [1] the embeddings are multiplied by (Gemma, Granite)
  ConstantId residual_scale = kNoConstant;   // f32 [1] attention's and the MLP's outputs are multiplied by (Granite)
  ConstantId logits_scale = kNoConstant;     // f32 [1] the logits are multiplied by (Granite)
  // f32 [1] undoing a multiplier folded into final_norm, for the embeddings method's hidden state
  // (Granite's logits_scaling).
  ConstantId hidden_state_scale = kNoConstant;
  std::vector<DecoderLayerWeights> layers;
};

struct DecoderModel {
  DecoderHyperParams params;
  std::vector<LayerAttention> attention;  // one per layer
  DecoderWeights weights;
  Activation activation = Activation::kSilu;
  double final_softcap = 0.0;  // > 0: logits become final_softcap * tanh(logit / final_softcap)
};

}  // namespace staticlm
