// SPDX-License-Identifier: Apache-2.0
#include "staticlm/contracts/hf_static_v1_spec.h"

#include <algorithm>
#include <cmath>

#include "staticlm/format/metadata.h"

namespace staticlm::hf_static_v1 {
namespace {

using T = fb::MetadataType;

const std::vector<MetadataKey>& keys() {
  static const std::vector<MetadataKey> table = {
      {kContractKey, T::String, true, {kName}},
      {kContractVersionKey, T::Int, true, {}},
      {key::kArchitecture, T::String, true, {}},
      {key::kVocabSize, T::Int, true, {}},
      {key::kHiddenSize, T::Int, true, {}},
      {key::kNumLayers, T::Int, true, {}},
      {key::kNumHeads, T::Int, true, {}},
      {key::kNumKvHeads, T::Int, true, {}},
      {key::kHeadDim, T::Int, true, {}},
      {key::kMaxCacheLen, T::Int, true, {}},
      {key::kPrefillLen, T::Int, true, {}},
      {key::kCacheDtype, T::String, true, {"f32", "f16", "q8_0"}},
      {key::kKvUpdate, T::String, true, {kKvUpdateInPlace, kKvUpdateReturned}},
      {key::kLogits, T::String, true, {kLogitsAll, kLogitsLast}},
      {key::kWeightDtype, T::String, true, {}},
      {key::kBosTokenId, T::Int, true, {}},
      {key::kEosTokenIds, T::IntList, true, {}},
      {key::kRopeTheta, T::Float, true, {}},
      {key::kRopeRotaryDim, T::Int, true, {}},
      {key::kRopeScaling, T::String, true, {"none", "linear", "llama3", "longrope"}},
      {key::kRopeFactor, T::Float, false, {}},
      {key::kRopeLowFreqFactor, T::Float, false, {}},
      {key::kRopeHighFreqFactor, T::Float, false, {}},
      {key::kRopeOriginalMaxPosition, T::Int, false, {}},
      {key::kRopeFactorSet, T::String, false, {kRopeFactorsShort, kRopeFactorsLong}},
      {key::kRopeAttentionFactor, T::Float, false, {}},
      {key::kAttentionWindow, T::IntList, false, {}},
      {key::kRopeLocalTheta, T::Float, false, {}},
      {key::kRopeLayers, T::IntList, false, {}},
      {key::kAttentionScale, T::Float, false, {}},
      {key::kAttnLogitSoftcap, T::Float, false, {}},
      {key::kFinalLogitSoftcap, T::Float, false, {}},
      {key::kEmbeddingPooling, T::String, false, {kPoolingMean, kPoolingLast}},
      {key::kTokenizerKind, T::String, true, {kTokenizerJson, kTokenizerSentencePiece, kTokenizerNone}},
      {key::kTokenizerSha256, T::String, true, {}},
      {key::kGenerationDoSample, T::Bool, false, {}},
      {key::kGenerationTemperature, T::Float, false, {}},
      {key::kGenerationTopK, T::Int, false, {}},
      {key::kGenerationTopP, T::Float, false, {}},
      {key::kGenerationMinP, T::Float, false, {}},
      {key::kGenerationRepetitionPenalty, T::Float, false, {}},
  };
  return table;
}

Result<int64_t> positive_int(const ProgramFile& file, std::string_view name) {
  STATICLM_ASSIGN_OR_RETURN(int64_t value, metadata_int(file, name));
  if (value <= 0) {
    return invalid_argument("metadata '", name, "': expected a positive integer, found ", value);
  }
  return value;
}

// The string value of an enumerated key, checked against the table.
Result<std::string> enumerated(const ProgramFile& file, std::string_view name) {
  STATICLM_ASSIGN_OR_RETURN(std::string value, metadata_string(file, name));
  const MetadataKey* entry = find_metadata_key(name);
  if (entry != nullptr && !entry->values.empty() &&
      std::find(entry->values.begin(), entry->values.end(), value) == entry->values.end()) {
    std::vector<std::string> allowed(entry->values.begin(), entry->values.end());
    return invalid_argument("metadata '", name, "': expected one of ", join(allowed, ", "), ", found '", value, "'");
  }
  return value;
}

// An optional float key, which must be > `above` where present; 0 when absent.
Result<double> optional_float_above(const ProgramFile& file, std::string_view name, double above) {
  if (file.find_metadata(name) == nullptr) {
    return 0.0;
  }
  STATICLM_ASSIGN_OR_RETURN(double value, metadata_float(file, name));
  if (!(value > above) || !std::isfinite(value)) {
    return invalid_argument("metadata '", name, "': expected a finite number > ", above, ", found ", value);
  }
  return value;
}

// longrope's factor set must be the one transformers uses for sequences as long as the cache.
Status read_longrope(const ProgramFile& file, Config& c) {
  STATICLM_ASSIGN_OR_RETURN(c.rope_attention_factor, optional_float_above(file, key::kRopeAttentionFactor, 0.0));
  if (file.find_metadata(key::kRopeFactorSet) == nullptr) {
    return ok_status();
  }
  STATICLM_ASSIGN_OR_RETURN(c.rope_factor_set, enumerated(file, key::kRopeFactorSet));
  if (file.find_metadata(key::kRopeOriginalMaxPosition) == nullptr) {
    return not_found("metadata '", key::kRopeFactorSet, "' needs '", key::kRopeOriginalMaxPosition,
                     "', the length it was chosen against");
  }
  STATICLM_ASSIGN_OR_RETURN(int64_t original, positive_int(file, key::kRopeOriginalMaxPosition));
  const std::string_view expected = c.max_cache_len > original ? kRopeFactorsLong : kRopeFactorsShort;
  if (c.rope_factor_set != expected) {
    return invalid_argument("metadata '", key::kRopeFactorSet, "': expected '", expected, "' for max_cache_len ",
                            c.max_cache_len, " and ", key::kRopeOriginalMaxPosition, " ", original, ", found '",
                            c.rope_factor_set, "'");
  }
  return ok_status();
}

Status read_attention(const ProgramFile& file, Config& c) {
  if (file.find_metadata(key::kAttentionWindow) != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(c.attention_window, metadata_int_list(file, key::kAttentionWindow));
    if (static_cast<int64_t>(c.attention_window.size()) != c.num_layers) {
      return invalid_argument("metadata '", key::kAttentionWindow, "': expected one window per layer (", c.num_layers,
                              "), found ", c.attention_window.size());
    }
    for (int64_t window : c.attention_window) {
      if (window < 0) {
        return invalid_argument("metadata '", key::kAttentionWindow, "': expected windows >= 0, found ", window);
      }
    }
  }
  STATICLM_ASSIGN_OR_RETURN(c.rope_local_theta, optional_float_above(file, key::kRopeLocalTheta, 1.0));
  if (c.rope_local_theta > 0.0 && c.attention_window.empty()) {
    return invalid_argument("metadata '", key::kRopeLocalTheta, "' is the rope base of the windowed layers, but '",
                            key::kAttentionWindow, "' names none");
  }
  if (file.find_metadata(key::kRopeLayers) != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(c.rope_layers, metadata_int_list(file, key::kRopeLayers));
    if (static_cast<int64_t>(c.rope_layers.size()) != c.num_layers) {
      return invalid_argument("metadata '", key::kRopeLayers, "': expected one entry per layer (", c.num_layers,
                              "), found ", c.rope_layers.size());
    }
    for (int64_t rotates : c.rope_layers) {
      if (rotates != 0 && rotates != 1) {
        return invalid_argument("metadata '", key::kRopeLayers, "': expected 0 or 1 per layer, found ", rotates);
      }
    }
  }
  STATICLM_RETURN_IF_ERROR(read_longrope(file, c));
  STATICLM_ASSIGN_OR_RETURN(c.attention_scale, optional_float_above(file, key::kAttentionScale, 0.0));
  STATICLM_ASSIGN_OR_RETURN(c.attn_logit_softcap, optional_float_above(file, key::kAttnLogitSoftcap, 0.0));
  STATICLM_ASSIGN_OR_RETURN(c.final_logit_softcap, optional_float_above(file, key::kFinalLogitSoftcap, 0.0));
  return ok_status();
}

}  // namespace

std::string key_cache_name(int64_t layer) {
  return str_cat("k_cache_", layer);
}
std::string value_cache_name(int64_t layer) {
  return str_cat("v_cache_", layer);
}
std::string new_key_name(int64_t layer) {
  return str_cat("k_new_", layer);
}
std::string new_value_name(int64_t layer) {
  return str_cat("v_new_", layer);
}

std::span<const MetadataKey> metadata_keys() {
  return keys();
}

bool is_program_level_key(std::string_view name) {
  return name == kPlacementMetadataKey;
}

const MetadataKey* find_metadata_key(std::string_view name) {
  for (const MetadataKey& entry : keys()) {
    if (entry.key == name) {
      return &entry;
    }
  }
  return nullptr;
}

Result<Config> Config::from_program(const ProgramFile& file) {
  Config c;
  STATICLM_ASSIGN_OR_RETURN(c.vocab_size, positive_int(file, key::kVocabSize));
  STATICLM_ASSIGN_OR_RETURN(c.hidden_size, positive_int(file, key::kHiddenSize));
  STATICLM_ASSIGN_OR_RETURN(c.num_layers, positive_int(file, key::kNumLayers));
  STATICLM_ASSIGN_OR_RETURN(c.num_kv_heads, positive_int(file, key::kNumKvHeads));
  STATICLM_ASSIGN_OR_RETURN(c.head_dim, positive_int(file, key::kHeadDim));
  STATICLM_ASSIGN_OR_RETURN(c.max_cache_len, positive_int(file, key::kMaxCacheLen));
  STATICLM_ASSIGN_OR_RETURN(c.prefill_len, positive_int(file, key::kPrefillLen));
  if (c.prefill_len > c.max_cache_len) {
    return invalid_argument("metadata '", key::kPrefillLen, "' (", c.prefill_len, ") exceeds '", key::kMaxCacheLen,
                            "' (", c.max_cache_len, ")");
  }
  STATICLM_ASSIGN_OR_RETURN(std::string cache_dtype, enumerated(file, key::kCacheDtype));
  c.cache_dtype = cache_dtype == "f16" ? DType::kF16 : cache_dtype == "q8_0" ? DType::kQ8_0 : DType::kF32;
  STATICLM_ASSIGN_OR_RETURN(std::string kv_update, enumerated(file, key::kKvUpdate));
  c.kv_returned = kv_update == kKvUpdateReturned;
  if (c.cache_dtype == DType::kQ8_0 && (c.kv_returned || c.head_dim % 32 != 0)) {
    return invalid_argument("metadata '", key::kCacheDtype, "' q8_0 needs '", key::kKvUpdate, "' ", kKvUpdateInPlace,
                            " and '", key::kHeadDim, "' a multiple of 32, found ", kv_update, " and ", c.head_dim);
  }
  STATICLM_ASSIGN_OR_RETURN(std::string logits, enumerated(file, key::kLogits));
  c.logits_last = logits == kLogitsLast;
  STATICLM_RETURN_IF_ERROR(read_attention(file, c));
  if (file.find_metadata(key::kEmbeddingPooling) != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(c.embedding_pooling, enumerated(file, key::kEmbeddingPooling));
  }
  return c;
}

std::vector<MetadataSpec> Config::to_metadata() const {
  std::vector<MetadataSpec> m = {
      {std::string(kContractKey), std::string(kName)},
      {std::string(kContractVersionKey), kVersion},
      {std::string(key::kVocabSize), vocab_size},
      {std::string(key::kHiddenSize), hidden_size},
      {std::string(key::kNumLayers), num_layers},
      {std::string(key::kNumKvHeads), num_kv_heads},
      {std::string(key::kHeadDim), head_dim},
      {std::string(key::kMaxCacheLen), max_cache_len},
      {std::string(key::kPrefillLen), prefill_len},
      {std::string(key::kCacheDtype), std::string(dtype_name(cache_dtype))},
      {std::string(key::kKvUpdate), std::string(kv_returned ? kKvUpdateReturned : kKvUpdateInPlace)},
      {std::string(key::kLogits), std::string(logits_last ? kLogitsLast : kLogitsAll)},
  };
  if (!embedding_pooling.empty()) {
    m.push_back({std::string(key::kEmbeddingPooling), embedding_pooling});
  }
  return m;
}

int64_t chunk_length(const Config& config, std::string_view method) {
  return method == kPrefill ? config.prefill_len : 1;
}

std::vector<TensorRule> expected_inputs(const Config& c, int64_t seq) {
  std::vector<TensorRule> inputs;
  inputs.push_back({std::string(kInputIds), DType::kI64, {1, seq}, false});
  inputs.push_back({std::string(kCachePosition), DType::kI64, {seq}, false});
  const Shape cache = {1, c.num_kv_heads, c.max_cache_len, c.head_dim};
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    inputs.push_back({key_cache_name(layer), c.cache_dtype, cache, !c.kv_returned});
    inputs.push_back({value_cache_name(layer), c.cache_dtype, cache, !c.kv_returned});
  }
  return inputs;
}

namespace {

void add_returned_rows(const Config& c, int64_t seq, std::vector<TensorRule>& outputs) {
  if (c.kv_returned) {
    const Shape rows = {1, c.num_kv_heads, seq, c.head_dim};
    for (int64_t layer = 0; layer < c.num_layers; ++layer) {
      outputs.push_back({new_key_name(layer), c.cache_dtype, rows, false});
      outputs.push_back({new_value_name(layer), c.cache_dtype, rows, false});
    }
  }
}

}  // namespace

std::vector<TensorRule> expected_outputs(const Config& c, int64_t seq) {
  std::vector<TensorRule> outputs;
  outputs.push_back({std::string(kLogits), DType::kF32, {1, c.logits_last ? 1 : seq, c.vocab_size}, false});
  add_returned_rows(c, seq, outputs);
  return outputs;
}

std::vector<TensorRule> expected_embedding_outputs(const Config& c) {
  std::vector<TensorRule> outputs;
  outputs.push_back({std::string(kHiddenStates), DType::kF32, {1, c.prefill_len, c.hidden_size}, false});
  add_returned_rows(c, c.prefill_len, outputs);
  return outputs;
}

}  // namespace staticlm::hf_static_v1
