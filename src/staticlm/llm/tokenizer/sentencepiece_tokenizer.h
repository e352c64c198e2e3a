// SPDX-License-Identifier: Apache-2.0
// SentencePieceTokenizer: the Tokenizer for SentencePiece .model files, backed by
// libsentencepiece. Encoding with add_special_tokens prepends the model's bos piece (the Llama
// convention; SentencePiece itself adds none); with parse_special the text of control pieces
// ("<s>", "</s>") and of the unknown piece maps to their ids, and the text between them is
// encoded by SentencePiece piece by piece. Decoding follows SentencePiece's DecodeIds; control
// pieces render as their piece text unless skip_special.
#pragma once

#include <sentencepiece_processor.h>

#include <memory>
#include <span>

#include "staticlm/llm/tokenizer/added_tokens.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Fails with InvalidArgument when the bytes are not a valid serialized model.
  static Result<std::unique_ptr<SentencePieceTokenizer>> load(std::span<const uint8_t> model_bytes);

  Result<std::vector<int32_t>> encode(std::string_view text, const EncodeOptions& options) const override;
  using Tokenizer::encode;
  Result<std::string> decode_bytes(std::span<const int32_t> ids, bool skip_special) const override;
  int32_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  Result<std::string> id_to_token(int32_t id) const override;
  std::optional<int32_t> bos_id() const override;
  std::vector<int32_t> eos_ids() const override;
  bool is_special(int32_t id) const override;
  bool clean_up_tokenization_spaces() const override { return false; }

 private:
  SentencePieceTokenizer() = default;
  Status check_id(int32_t id) const;
  // Decodes ordinary (non-control) ids with SentencePiece.
  Result<std::string> decode_run(std::span<const int32_t> ids) const;

  sentencepiece::SentencePieceProcessor processor_;
  AddedTokenMatcher special_matcher_;
};

}  // namespace staticlm
