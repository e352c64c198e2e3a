// SPDX-License-Identifier: Apache-2.0
// HfTokenizer: the Tokenizer for Hugging Face tokenizer.json files, assembled from its parts by
// load_tokenizer_json (hf_tokenizer_loader.cpp). Encoding runs added-token matching on the raw
// text, then per plain segment: normalizer, added tokens marked "normalized", pre-tokenizer, BPE;
// then the post-processor's special tokens. Decoding maps ids to token strings and runs the
// decoder chain.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/llm/tokenizer/added_tokens.h"
#include "staticlm/llm/tokenizer/bpe_model.h"
#include "staticlm/llm/tokenizer/normalizer.h"
#include "staticlm/llm/tokenizer/post_processor.h"
#include "staticlm/llm/tokenizer/pre_tokenizer.h"
#include "staticlm/llm/tokenizer/token_decoder.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

struct HfTokenizerParts {
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<BpeModel> model;              // required
  std::unique_ptr<TokenDecoder> decoder;        // may be null
  SpecialTokenTemplate special_template;
  std::vector<AddedToken> added_tokens;
  std::vector<int32_t> extra_special_ids;  // tokenizer_config.json additional_special_tokens
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
  bool clean_up_tokenization_spaces = false;
};

class HfTokenizer final : public Tokenizer {
 public:
  explicit HfTokenizer(HfTokenizerParts parts);

  Result<std::vector<int32_t>> encode(std::string_view text, const EncodeOptions& options) const override;
  using Tokenizer::encode;
  Result<std::string> decode_bytes(std::span<const int32_t> ids, bool skip_special) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  Result<std::string> id_to_token(int32_t id) const override;
  std::optional<int32_t> bos_id() const override { return parts_.bos_id; }
  std::vector<int32_t> eos_ids() const override { return parts_.eos_ids; }
  bool is_special(int32_t id) const override;
  bool clean_up_tokenization_spaces() const override { return parts_.clean_up_tokenization_spaces; }

 private:
  enum class Kind : uint8_t { kUnused, kVocab, kAdded };
  struct TokenEntry {
    std::string text;
    Kind kind = Kind::kUnused;
    bool special = false;
  };

  // Normalizes, pre-tokenizes and BPE-encodes one plain segment of the input.
  Status encode_plain(std::string_view text, bool at_input_start, bool parse_special, std::vector<int32_t>& ids) const;
  Result<const TokenEntry*> entry(int32_t id) const;

  HfTokenizerParts parts_;
  std::vector<TokenEntry> tokens_;  // indexed by id
  TokenIdMap added_ids_;
  AddedTokenMatcher raw_matcher_;
  AddedTokenMatcher normalized_matcher_;
};

}  // namespace staticlm
