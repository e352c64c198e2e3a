// SPDX-License-Identifier: Apache-2.0
// The hf_static v1 I/O contract, spelled once (docs/hf_static_v1.md is its prose): method and
// tensor names, metadata keys with their types, the values they may take, and the shape of every
// input and output. The exporter writes programs with these names, the llm validator and session
// read them, and a test checks the document's tables against this file, so the writer, the
// reader and the docs cannot drift apart.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/format/metadata_keys.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_spec.h"

namespace staticlm::hf_static_v1 {

inline constexpr std::string_view kName = "hf_static";
inline constexpr int64_t kVersion = 1;

// Methods.
inline constexpr std::string_view kPrefill = "prefill";
inline constexpr std::string_view kDecode = "decode";
// Optional: prefill's inputs and cache writes, with the final-normed hidden state of every row
// as its output instead of the logits (docs/hf_static_v1.md, "The embeddings method").
inline constexpr std::string_view kEmbeddings = "embeddings";

// Tensors.
inline constexpr std::string_view kInputIds = "input_ids";
inline constexpr std::string_view kCachePosition = "cache_position";
inline constexpr std::string_view kLogits = "logits";
inline constexpr std::string_view kHiddenStates = "hidden_states";
std::string key_cache_name(int64_t layer);    // k_cache_{l}
std::string value_cache_name(int64_t layer);  // v_cache_{l}
std::string new_key_name(int64_t layer);      // k_new_{l}
std::string new_value_name(int64_t layer);    // v_new_{l}

// Metadata keys (beyond kContractKey / kContractVersionKey).
namespace key {
inline constexpr std::string_view kArchitecture = "architecture";
inline constexpr std::string_view kVocabSize = "vocab_size";
inline constexpr std::string_view kHiddenSize = "hidden_size";
inline constexpr std::string_view kNumLayers = "num_layers";
inline constexpr std::string_view kNumHeads = "num_heads";
inline constexpr std::string_view kNumKvHeads = "num_kv_heads";
inline constexpr std::string_view kHeadDim = "head_dim";
inline constexpr std::string_view kMaxCacheLen = "max_cache_len";
inline constexpr std::string_view kPrefillLen = "prefill_len";
inline constexpr std::string_view kCacheDtype = "cache_dtype";
inline constexpr std::string_view kKvUpdate = "kv_update";
inline constexpr std::string_view kLogits = "logits";
inline constexpr std::string_view kWeightDtype = "weight_dtype";
inline constexpr std::string_view kBosTokenId = "bos_token_id";
inline constexpr std::string_view kEosTokenIds = "eos_token_ids";
inline constexpr std::string_view kRopeTheta = "rope_theta";
inline constexpr std::string_view kRopeRotaryDim = "rope_rotary_dim";
inline constexpr std::string_view kRopeScaling = "rope_scaling";
inline constexpr std::string_view kRopeFactor = "rope_factor";
inline constexpr std::string_view kRopeLowFreqFactor = "rope_low_freq_factor";
inline constexpr std::string_view kRopeHighFreqFactor = "rope_high_freq_factor";
inline constexpr std::string_view kRopeOriginalMaxPosition = "rope_original_max_position";
inline constexpr std::string_view kRopeFactorSet = "rope_factor_set";
inline constexpr std::string_view kRopeAttentionFactor = "rope_attention_factor";
inline constexpr std::string_view kAttentionWindow = "attention_window";
inline constexpr std::string_view kRopeLocalTheta = "rope_local_theta";
inline constexpr std::string_view kRopeLayers = "rope_layers";
inline constexpr std::string_view kAttentionScale = "attention_scale";
inline constexpr std::string_view kAttnLogitSoftcap = "attn_logit_softcap";
inline constexpr std::string_view kFinalLogitSoftcap = "final_logit_softcap";
inline constexpr std::string_view kEmbeddingPooling = "embedding_pooling";
inline constexpr std::string_view kTokenizerKind = "tokenizer_kind";
inline constexpr std::string_view kTokenizerSha256 = "tokenizer_sha256";
inline constexpr std::string_view kGenerationDoSample = "generation.do_sample";
inline constexpr std::string_view kGenerationTemperature = "generation.temperature";
inline constexpr std::string_view kGenerationTopK = "generation.top_k";
inline constexpr std::string_view kGenerationTopP = "generation.top_p";
inline constexpr std::string_view kGenerationMinP = "generation.min_p";
inline constexpr std::string_view kGenerationRepetitionPenalty = "generation.repetition_penalty";
}  // namespace key

// Spellings of enumerated values.
inline constexpr std::string_view kKvUpdateInPlace = "in-place";
inline constexpr std::string_view kKvUpdateReturned = "returned";
inline constexpr std::string_view kLogitsAll = "all";
inline constexpr std::string_view kLogitsLast = "last";
inline constexpr std::string_view kTokenizerJson = "tokenizer.json";
inline constexpr std::string_view kTokenizerSentencePiece = "sentencepiece";
inline constexpr std::string_view kTokenizerNone = "none";
inline constexpr std::string_view kRopeFactorsShort = "short";
inline constexpr std::string_view kRopeFactorsLong = "long";
inline constexpr std::string_view kPoolingMean = "mean";
inline constexpr std::string_view kPoolingLast = "last";

// A metadata key of the contract: its type, whether a program must have it, and the values an
// enumerated one may take.
struct MetadataKey {
  std::string_view key;
  fb::MetadataType type;
  bool required;
  std::vector<std::string_view> values;  // empty: any value of the type
};

// Every key, in the order docs/hf_static_v1.md lists them.
std::span<const MetadataKey> metadata_keys();
// The contract's entry for `key`, or nullptr. A reader ignores keys it does not know (a
// compatible addition); the exporter writes no others (a test holds it to that).
const MetadataKey* find_metadata_key(std::string_view key);
// Keys any program may carry besides its contract's (format/metadata_keys.h: the placement).
bool is_program_level_key(std::string_view key);

// The contract's view of a program's metadata.
struct Config {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_cache_len = 0;
  int64_t prefill_len = 0;
  DType cache_dtype = DType::kF32;
  bool kv_returned = false;
  bool logits_last = false;
  // How the layers attend, where the program says (optional keys; empty or 0 when absent): each
  // layer's window (0: the whole cache), the windowed layers' rope base, whether each layer
  // rotates, longrope's factor set and attention factor, the scores scale and the soft-caps of the
  // scores and of the logits.
  std::vector<int64_t> attention_window = {};
  double rope_local_theta = 0.0;
  std::vector<int64_t> rope_layers = {};
  std::string rope_factor_set = {};
  double rope_attention_factor = 0.0;
  double attention_scale = 0.0;
  double attn_logit_softcap = 0.0;
  double final_logit_softcap = 0.0;
  // The pooling the program's embeddings method suggests (kPoolingMean or kPoolingLast); empty
  // when it has no such method.
  std::string embedding_pooling = {};

  // Reads and range-checks the required keys, and the optional ones above where present. Fails
  // with InvalidArgument (NotFound for a missing key) naming the metadata key, what it must be and
  // what was found.
  static Result<Config> from_program(const ProgramFile& file);
  // The metadata entries this config implies (the exporter adds the model-specific rest).
  std::vector<MetadataSpec> to_metadata() const;
};

// What one input or output must be.
struct TensorRule {
  std::string name;
  DType dtype;
  Shape shape;
  bool is_mutable;  // inputs: updated in place by the method
};

// Chunk length of `method` (prefill_len, or 1 for decode).
int64_t chunk_length(const Config& config, std::string_view method);
std::vector<TensorRule> expected_inputs(const Config& config, int64_t seq);
std::vector<TensorRule> expected_outputs(const Config& config, int64_t seq);
// The embeddings method's outputs: hidden_states [1, prefill_len, hidden_size] f32, then the new
// cache rows where the update form returns them.
std::vector<TensorRule> expected_embedding_outputs(const Config& config);

}  // namespace staticlm::hf_static_v1
