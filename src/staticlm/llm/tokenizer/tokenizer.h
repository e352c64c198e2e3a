// SPDX-License-Identifier: Apache-2.0
// Tokenizer: text <-> token ids for the LLM runner, independent of any backend.
//
// Two implementations sit behind this interface: Hugging Face tokenizer.json files (BPE models
// with their normalizers, pre-tokenizers, added tokens, post-processor and decoder; see
// docs/tokenizers.md for exactly which components are supported) and SentencePiece .model files.
// Loaded tokenizers are immutable and safe to use from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm {

struct EncodeOptions {
  // Adds the tokens the tokenizer wraps a sequence in (BOS for Llama), as given by the
  // tokenizer.json post_processor, or by add_bos_token / add_eos_token in tokenizer_config.json
  // when the post_processor adds none.
  bool add_special_tokens = true;
  // Recognises the text of special added tokens ("<|im_start|>", "<s>") in the input and maps it
  // to their ids. When false such text is tokenized as ordinary text; added tokens that are not
  // special (Qwen's "<think>") are still recognised, as in Hugging Face's split_special_tokens.
  bool parse_special = true;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Fails with InvalidArgument when `text` is not valid UTF-8.
  virtual Result<std::vector<int32_t>> encode(std::string_view text, const EncodeOptions& options) const = 0;
  Result<std::vector<int32_t>> encode(std::string_view text) const { return encode(text, EncodeOptions{}); }

  // The text of `ids`: decode_bytes with ill-formed UTF-8 replaced by U+FFFD, then, when the
  // tokenizer config asks for it (clean_up_tokenization_spaces), spaces before punctuation and
  // English contractions removed. With `skip_special` special tokens contribute nothing.
  // Fails with OutOfRange for an id that is negative or not in the vocabulary.
  Result<std::string> decode(std::span<const int32_t> ids, bool skip_special) const;

  // The raw bytes of `ids`, before any UTF-8 repair or clean-up: may end (or contain) a partial
  // character, which is what StreamingDecoder needs to see. Same errors as decode.
  virtual Result<std::string> decode_bytes(std::span<const int32_t> ids, bool skip_special) const = 0;

  // One more than the largest token id (ids below it may still be unused).
  virtual int32_t vocab_size() const = 0;
  // The id of a token string exactly as the vocabulary spells it ("Ġthe", "▁the", "<s>").
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  // Fails with OutOfRange for an id not in the vocabulary.
  virtual Result<std::string> id_to_token(int32_t id) const = 0;

  virtual std::optional<int32_t> bos_id() const = 0;
  // The end-of-sequence ids the tokenizer knows of (empty when it knows none; generation_config.json
  // may add more).
  virtual std::vector<int32_t> eos_ids() const = 0;
  // True for special tokens (those decode skips with skip_special).
  virtual bool is_special(int32_t id) const = 0;
  // Whether decode applies clean_up_tokenization (tokenizer_config.json's
  // clean_up_tokenization_spaces; off when there is no config).
  virtual bool clean_up_tokenization_spaces() const = 0;
};

// The Hugging Face clean-up of decoded text: " ." -> ".", " n't" -> "n't", and so on.
std::string clean_up_tokenization(std::string_view text);

// Loads a Hugging Face tokenizer.json, with the matching tokenizer_config.json when there is one
// (it supplies bos/eos tokens, clean_up_tokenization_spaces, additional_special_tokens,
// add_bos_token / add_eos_token). Fails with InvalidArgument for malformed JSON or a malformed
// component (the message says "tokenizer.json: <field>: ..." or "tokenizer_config.json: ..."),
// Unimplemented for a component type this build does not support (naming it and the supported
// ones).
Result<std::unique_ptr<Tokenizer>> load_tokenizer_json(std::string_view json_text,
                                                       std::optional<std::string_view> tokenizer_config_json);

// Loads a SentencePiece model (the bytes of a tokenizer.model file). Fails with InvalidArgument
// when the bytes are not a valid model.
Result<std::unique_ptr<Tokenizer>> load_sentencepiece_model(std::span<const uint8_t> model_bytes);

// Loads dir/tokenizer.json (plus dir/tokenizer_config.json when present), else dir/tokenizer.model.
// Fails with NotFound when the directory has neither, otherwise as the loaders above.
Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_dir(const std::string& dir);

}  // namespace staticlm
