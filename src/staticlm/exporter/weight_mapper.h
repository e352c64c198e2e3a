// SPDX-License-Identifier: Apache-2.0
// Maps checkpoint tensors to the program's named constants, converted to the export dtype and
// read lazily from the mapped checkpoint (which must outlive the constants). Matrices take the
// export's weight dtype; 1-D weights (norms, biases) stay f32: they are tiny and
// precision-sensitive.
#pragma once

#include <string>

#include "staticlm/core/result.h"
#include "staticlm/exporter/decoder_model.h"
#include "staticlm/exporter/hf_config.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

class WeightMapper {
 public:
  WeightMapper(const SafetensorsCheckpoint& checkpoint, ConstantTable& constants, DType weight_dtype)
      : checkpoint_(checkpoint), constants_(constants), weight_dtype_(weight_dtype) {}

  // The constant for a tensor the model requires (NotFound naming the tensor when absent).
  Result<ConstantId> require(const std::string& name);
  // kNoConstant when the checkpoint has no such tensor.
  Result<ConstantId> optional(const std::string& name);
  // As require(), each value shifted by `offset` and stored f32: Gemma's RMSNorm weights, which
  // apply as (1 + w), folded into plain RMSNorm weights. Exact with respect to Hugging Face, which
  // adds 1 to the f32 weight too.
  Result<ConstantId> require_shifted(const std::string& name, float offset);
  // As require(), each value multiplied by `factor` and stored f32: a multiplier folded into a
  // 1-D weight (Granite's logits_scaling into the final norm, where it is exact).
  Result<ConstantId> require_scaled(const std::string& name, float factor);
  // Rows [begin, end) of the 2-D tensor `name`, as the constant `constant_name` in the matrices'
  // dtype: one projection of a fused weight (Phi-3's qkv_proj, gate_up_proj). Fails with
  // InvalidArgument naming the tensor when it is not 2-D or has fewer rows.
  Result<ConstantId> require_rows(const std::string& name, int64_t begin, int64_t end,
                                  const std::string& constant_name);
  // A constant the model defines rather than the checkpoint stores: f32 [1] holding `value`.
  Result<ConstantId> scalar(const std::string& name, float value);
  // The standard per-layer tensors "model.layers.{i}.{suffix}" of a Llama-style block.
  Result<DecoderLayerWeights> llama_layer(int64_t layer, bool qkv_bias, bool o_bias, bool qk_norm);
  // Embedding, final norm and lm_head (tied to the embedding when the config says so).
  Status llama_globals(const HfConfig& config, DecoderWeights& weights);

 private:
  const SafetensorsCheckpoint& checkpoint_;
  ConstantTable& constants_;
  DType weight_dtype_;
};

}  // namespace staticlm
