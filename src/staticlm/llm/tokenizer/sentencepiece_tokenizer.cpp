// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/sentencepiece_tokenizer.h"

#include <exception>
#include <string>
#include <vector>

#include "staticlm/llm/tokenizer/byte_level.h"

namespace staticlm {

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::load(std::span<const uint8_t> model_bytes) {
  std::unique_ptr<SentencePieceTokenizer> tokenizer(new SentencePieceTokenizer());
  std::string_view serialized(reinterpret_cast<const char*>(model_bytes.data()), model_bytes.size());
  // The library validates a model with Status, except where it builds its piece trie: there a
  // hostile model (an empty piece, found by tests/fuzz) throws instead. No exception leaves here.
  sentencepiece::util::Status status;
  try {
    status = tokenizer->processor_.LoadFromSerializedProto(serialized);
  } catch (const std::exception& error) {
    return invalid_argument("tokenizer.model: not a valid SentencePiece model (", model_bytes.size(),
                            " bytes): ", error.what());
  }
  if (!status.ok()) {
    return invalid_argument("tokenizer.model: not a valid SentencePiece model (", model_bytes.size(),
                            " bytes): ", status.ToString());
  }
  std::vector<AddedToken> specials;
  for (int id = 0; id < tokenizer->processor_.GetPieceSize(); ++id) {
    if (!tokenizer->processor_.IsControl(id) && !tokenizer->processor_.IsUnknown(id)) continue;
    const std::string& piece = tokenizer->processor_.IdToPiece(id);
    if (piece.empty()) continue;
    AddedToken token;
    token.id = id;
    token.content = piece;
    token.special = true;
    specials.push_back(std::move(token));
  }
  tokenizer->special_matcher_ = AddedTokenMatcher(specials, [](const AddedToken&) { return true; });
  return tokenizer;
}

Status SentencePieceTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= processor_.GetPieceSize()) {
    return out_of_range("token id ", id, " is not in the vocabulary (ids 0..", processor_.GetPieceSize() - 1, ")");
  }
  return ok_status();
}

Result<std::vector<int32_t>> SentencePieceTokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  if (options.add_special_tokens && processor_.bos_id() >= 0) ids.push_back(processor_.bos_id());
  std::vector<TextSegment> segments;
  if (options.parse_special) {
    segments = special_matcher_.split(text, true);
  } else if (!text.empty()) {
    segments.push_back({0, text.size(), -1});
  }
  std::vector<int> piece_ids;
  for (const TextSegment& segment : segments) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
      continue;
    }
    auto status = processor_.Encode(text.substr(segment.begin, segment.end - segment.begin), &piece_ids);
    if (!status.ok()) return invalid_argument("encode: SentencePiece failed: ", status.ToString());
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  }
  return ids;
}

Result<std::string> SentencePieceTokenizer::decode_run(std::span<const int32_t> ids) const {
  std::string text;
  if (ids.empty()) return text;
  // SentencePiece turns an unfinished byte sequence at the end into U+FFFD; StreamingDecoder needs
  // those bytes raw, so a trailing run of byte pieces is converted here.
  size_t byte_run = ids.size();
  while (byte_run > 0 && processor_.IsByte(ids[byte_run - 1])) --byte_run;
  std::vector<int> head(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(byte_run));
  if (!head.empty()) {
    auto status = processor_.Decode(head, &text);
    if (!status.ok()) return invalid_argument("decode: SentencePiece failed: ", status.ToString());
  }
  for (size_t i = byte_run; i < ids.size(); ++i) {
    int byte = parse_byte_token(processor_.IdToPiece(ids[i]));
    if (byte < 0) {
      return invalid_argument("decode: byte piece ", ids[i], " is spelled '", processor_.IdToPiece(ids[i]),
                              "', not <0xAB>");
    }
    text.push_back(static_cast<char>(byte));
  }
  return text;
}

Result<std::string> SentencePieceTokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    STATICLM_RETURN_IF_ERROR(check_id(id));
    if (!skip_special || !is_special(id)) kept.push_back(id);
  }
  // Control pieces decode to nothing in SentencePiece; shown, they split the text into runs.
  std::string text;
  size_t run_begin = 0;
  for (size_t i = 0; i <= kept.size(); ++i) {
    bool control = i < kept.size() && processor_.IsControl(kept[i]);
    if (i < kept.size() && !control) continue;
    STATICLM_ASSIGN_OR_RETURN(std::string run,
                              decode_run(std::span<const int32_t>(kept).subspan(run_begin, i - run_begin)));
    text += run;
    if (control) text += processor_.IdToPiece(kept[i]);
    run_begin = i + 1;
  }
  return text;
}

std::optional<int32_t> SentencePieceTokenizer::token_to_id(std::string_view token) const {
  int id = processor_.PieceToId(token);
  // PieceToId answers unk_id for unknown pieces; only an exact spelling counts.
  if (id < 0 || id >= processor_.GetPieceSize() || processor_.IdToPiece(id) != token) return std::nullopt;
  return id;
}

Result<std::string> SentencePieceTokenizer::id_to_token(int32_t id) const {
  STATICLM_RETURN_IF_ERROR(check_id(id));
  return processor_.IdToPiece(id);
}

std::optional<int32_t> SentencePieceTokenizer::bos_id() const {
  int id = processor_.bos_id();
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

std::vector<int32_t> SentencePieceTokenizer::eos_ids() const {
  int id = processor_.eos_id();
  return id >= 0 ? std::vector<int32_t>{id} : std::vector<int32_t>{};
}

bool SentencePieceTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < processor_.GetPieceSize() && (processor_.IsControl(id) || processor_.IsUnknown(id));
}

}  // namespace staticlm
