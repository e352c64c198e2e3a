// Model families: one file per Hugging Face architecture under models/, each with the same
// shape — read the hyper-parameters from the config, map the checkpoint's tensors to named
// constants, and build the method graph (through decoder_graph.h's builder, with the family's
// own pieces switched on). The registry below is the single list of what export supports.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/exporter/decoder_graph.h"
#include "staticlm/exporter/hf_config.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

struct FamilyOptions {
  DType weight_dtype = DType::kF32;  // matrices; 1-D weights (norms, biases) stay f32
  int64_t max_cache_len = 0;         // families with a sliding window check it against this
};

struct DecoderModel {
  DecoderHyperParams params;
  DecoderWeights weights;
};

struct ModelFamily {
  std::string_view architecture;
  // Reads hyper-parameters and maps tensors into `constants`. Errors name config.json or the
  // checkpoint directory and the key or tensor.
  Result<DecoderModel> (*load)(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                               ConstantTable& constants, const FamilyOptions& options);
};

std::span<const ModelFamily> model_families();

// The family for the config's architectures. Fails with Unimplemented listing the supported
// architectures.
Result<const ModelFamily*> find_model_family(const HfConfig& config);

// Shared by the family files: hyper-parameters every Llama-style decoder reads the same way,
// refusing settings export does not implement (hidden_act other than silu, mlp_bias).
Result<DecoderHyperParams> read_decoder_hyper_params(const HfConfig& config);

// Refuses an attention window smaller than the cache: the exported program attends over the
// whole cache, which would silently differ from the model.
Status check_sliding_window(const HfConfig& config, int64_t max_cache_len);

// Which optional pieces a Llama-style family's blocks have.
struct LlamaStyleLayout {
  bool qkv_bias = false;        // biases on q/k/v projections
  bool o_bias = false;          // bias on the output projection
  bool qk_norm = false;         // per-head RMSNorm of queries and keys before RoPE
  bool sliding_window = false;  // the config may set an attention window (checked against the cache)
};

// The shared body of the family files: reads hyper-parameters, checks the window, maps the
// standard tensor names with the family's pieces switched on.
Result<DecoderModel> load_llama_style(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                      ConstantTable& constants, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout);

// Maps checkpoint tensors to constants (converted to the export dtype, read lazily from the
// mapping). The checkpoint must outlive the constants.
class WeightMapper {
 public:
  WeightMapper(const SafetensorsCheckpoint& checkpoint, ConstantTable& constants, DType weight_dtype)
      : checkpoint_(checkpoint), constants_(constants), weight_dtype_(weight_dtype) {}

  // The constant for a tensor the model requires (NotFound naming the tensor when absent).
  Result<ConstantId> require(const std::string& name);
  // kNoConstant when the checkpoint has no such tensor.
  Result<ConstantId> optional(const std::string& name);
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
