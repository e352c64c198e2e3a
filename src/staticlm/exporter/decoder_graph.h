// The graph of a Llama-style decoder (pre-norm attention + gated MLP blocks) for one hf_static
// method. Model families describe themselves as DecoderHyperParams + DecoderWeights (their own
// file reads the config and maps checkpoint tensors) and call build_decoder_graph; the optional
// pieces (q/k/v biases, per-head q/k norms) cover Llama, Qwen2, Mistral and Qwen3.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
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
  RopeParams rope;
};

inline constexpr ConstantId kNoConstant = -1;

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
  ConstantId post_attention_norm = kNoConstant;
  ConstantId gate_proj = kNoConstant;
  ConstantId up_proj = kNoConstant;
  ConstantId down_proj = kNoConstant;
};

struct DecoderWeights {
  ConstantId embed_tokens = kNoConstant;
  ConstantId final_norm = kNoConstant;
  ConstantId lm_head = kNoConstant;  // equals embed_tokens when the embeddings are tied
  std::vector<DecoderLayerWeights> layers;
};

enum class KvUpdateForm { kInPlace, kReturned };
// kLast: logits of each chunk's last row only; the last layer narrows to that row after its
// attention, so its o_proj, MLP, the final norm and the head multiply one row.
enum class LogitsMode { kAll, kLast };

std::string_view kv_update_form_name(KvUpdateForm form);
std::string_view logits_mode_name(LogitsMode mode);

struct DecoderMethodShape {
  int64_t seq_len = 1;
  int64_t cache_len = 0;
  DType cache_dtype = DType::kF32;
  KvUpdateForm kv_update = KvUpdateForm::kInPlace;
  LogitsMode logits = LogitsMode::kAll;
};

// Builds one method's graph over `constants` (which holds the weights named in `weights`).
// Inputs and outputs follow docs/hf_static_v1.md. Fails with InvalidArgument when a weight's
// shape does not fit the hyper-parameters (naming the constant).
Result<std::unique_ptr<Graph>> build_decoder_graph(const DecoderHyperParams& params, const DecoderWeights& weights,
                                                   std::shared_ptr<ConstantTable> constants,
                                                   const DecoderMethodShape& shape);

}  // namespace staticlm
