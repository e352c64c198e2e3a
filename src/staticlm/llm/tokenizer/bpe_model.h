// SPDX-License-Identifier: Apache-2.0
// The BPE model of a tokenizer.json ("model": {"type": "BPE", ...}): a vocabulary, ranked merges,
// and the byte-fallback / unknown-token rules for characters the vocabulary lacks.
// Thread-safe: encode_word may be called concurrently (the word cache is locked).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/json_fields.h"

namespace staticlm {

// Token ids must stay below this: it bounds the id-to-token table an untrusted file can make us
// allocate, far above any real vocabulary (the largest are ~262k).
inline constexpr int64_t kMaxTokenId = int64_t{1} << 24;

// Hash and equality that let unordered_maps keyed by std::string be probed with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // Reads the model object. `where` is "model". Fails with Unimplemented for a model type other
  // than BPE (or a BPE option this build lacks, such as dropout), InvalidArgument for a malformed
  // vocab or merges (a merge naming a token outside the vocabulary, an id out of range, ...).
  static Result<std::unique_ptr<BpeModel>> from_json(const Json& config, std::string_view where);

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  const TokenIdMap& vocab() const { return vocab_; }
  std::optional<int32_t> unk_id() const { return unk_id_; }

 private:
  BpeModel() = default;
  std::vector<int32_t> merge_word(std::string_view word) const;
  void append_char(std::string_view piece, std::vector<int32_t>& symbols) const;

  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  TokenIdMap vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_ids_{};  // "<0xAB>" tokens for byte fallback; -1 where absent
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace staticlm
