// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/bpe_model.h"

#include <queue>

#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

// Words longer than this are rare enough that caching them only costs memory.
constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 20000;

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

struct MergeCandidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  // std::priority_queue pops the largest; we want the lowest rank, then the leftmost position.
  bool operator<(const MergeCandidate& other) const { return rank != other.rank ? rank > other.rank : pos > other.pos; }
};

Status read_vocab(const Json& config, std::string_view where, TokenIdMap& vocab) {
  const Json* entries = find_member(config, "vocab");
  if (entries == nullptr || !entries->is_object()) {
    return invalid_argument(field_name(where, "vocab"), ": expected an object of token -> id, found ",
                            entries == nullptr ? std::string("nothing") : json_preview(*entries));
  }
  vocab.reserve(entries->size());
  for (auto it = entries->begin(); it != entries->end(); ++it) {
    const Json& id = it.value();
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenId) {
      return invalid_argument(field_name(where, "vocab"), "[\"", utf8_repair(it.key()), "\"]: expected an id in [0, ",
                              kMaxTokenId, "), found ", json_preview(id));
    }
    vocab.emplace(it.key(), static_cast<int32_t>(id.get<int64_t>()));
  }
  return ok_status();
}

// A merge is "left right" (tokenizers < 0.20) or ["left", "right"].
Status read_merge_pair(const Json& merge, std::string_view where, size_t index, std::string& left, std::string& right) {
  if (merge.is_string()) {
    const std::string& text = merge.get_ref<const std::string&>();
    size_t space = text.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
        text.find(' ', space + 1) != std::string::npos) {
      return invalid_argument(where, ".merges[", index, "]: expected \"left right\" with one space, found ",
                              json_preview(merge));
    }
    left = text.substr(0, space);
    right = text.substr(space + 1);
    return ok_status();
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    left = merge[0].get<std::string>();
    right = merge[1].get<std::string>();
    return ok_status();
  }
  return invalid_argument(where, ".merges[", index, "]: expected \"left right\" or [\"left\", \"right\"], found ",
                          json_preview(merge));
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::from_json(const Json& config, std::string_view where) {
  if (!config.is_object()) {
    return invalid_argument(where, ": expected an object, found ", json_preview(config));
  }
  // Files written by old tokenizers versions omit "type"; a BPE model is recognised by its merges.
  std::string type = "BPE";
  if (find_member(config, "type") != nullptr || find_member(config, "merges") == nullptr) {
    STATICLM_ASSIGN_OR_RETURN(type, read_component_type(config, where));
  }
  if (type != "BPE") {
    return unimplemented(where, " type '", type, "' is not supported (supported: BPE)");
  }
  const Json* dropout = find_member(config, "dropout");
  if (dropout != nullptr && !dropout->is_null() && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return unimplemented(field_name(where, "dropout"), ": BPE dropout (", json_preview(*dropout),
                         ") is not supported; inference tokenization is deterministic");
  }

  std::unique_ptr<BpeModel> model(new BpeModel());
  STATICLM_RETURN_IF_ERROR(read_vocab(config, where, model->vocab_));
  STATICLM_ASSIGN_OR_RETURN(model->byte_fallback_, read_bool(config, "byte_fallback", false, where));
  STATICLM_ASSIGN_OR_RETURN(model->fuse_unk_, read_bool(config, "fuse_unk", false, where));
  STATICLM_ASSIGN_OR_RETURN(model->ignore_merges_, read_bool(config, "ignore_merges", false, where));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> prefix,
                            read_optional_string(config, "continuing_subword_prefix", where));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> suffix,
                            read_optional_string(config, "end_of_word_suffix", where));
  model->continuing_subword_prefix_ = prefix.value_or("");
  model->end_of_word_suffix_ = suffix.value_or("");
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> unk, read_optional_string(config, "unk_token", where));
  if (unk) {
    auto it = model->vocab_.find(*unk);
    if (it == model->vocab_.end()) {
      return invalid_argument(field_name(where, "unk_token"), ": '", utf8_repair(*unk), "' is not in the vocabulary");
    }
    model->unk_id_ = it->second;
  }
  model->byte_ids_.fill(-1);
  if (model->byte_fallback_) {
    for (int byte = 0; byte < 256; ++byte) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      std::string name = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
      auto it = model->vocab_.find(name);
      if (it != model->vocab_.end()) model->byte_ids_[byte] = it->second;
    }
  }

  STATICLM_ASSIGN_OR_RETURN(const Json* merges, read_array(config, "merges", where));
  model->merges_.reserve(merges->size());
  const std::string& prefix_text = model->continuing_subword_prefix_;
  std::string left;
  std::string right;
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    STATICLM_RETURN_IF_ERROR(read_merge_pair((*merges)[rank], where, rank, left, right));
    auto left_it = model->vocab_.find(left);
    auto right_it = model->vocab_.find(right);
    if (left_it == model->vocab_.end() || right_it == model->vocab_.end()) {
      return invalid_argument(where, ".merges[", rank, "]: token '",
                              utf8_repair(left_it == model->vocab_.end() ? left : right), "' is not in the vocabulary");
    }
    // With a continuing-subword prefix the right half carries it, the merged token only once.
    std::string merged = left;
    bool strip_prefix = !prefix_text.empty() && right.compare(0, prefix_text.size(), prefix_text) == 0;
    merged.append(right, strip_prefix ? prefix_text.size() : 0);
    auto merged_it = model->vocab_.find(merged);
    if (merged_it == model->vocab_.end()) {
      return invalid_argument(where, ".merges[", rank, "]: merged token '", utf8_repair(merged),
                              "' is not in the vocabulary");
    }
    // A repeated pair keeps its last rank, as the reference implementations do.
    model->merges_[pair_key(left_it->second, right_it->second)] = {static_cast<int32_t>(rank), merged_it->second};
  }
  return model;
}

void BpeModel::append_char(std::string_view piece, std::vector<int32_t>& symbols) const {
  auto it = vocab_.find(piece);
  if (it != vocab_.end()) {
    symbols.push_back(it->second);
    return;
  }
  if (byte_fallback_) {
    // The affixes are not part of the bytes: fall back on the character itself.
    std::string_view bytes = piece;
    if (!continuing_subword_prefix_.empty() &&
        bytes.substr(0, continuing_subword_prefix_.size()) == std::string_view(continuing_subword_prefix_)) {
      bytes.remove_prefix(continuing_subword_prefix_.size());
    }
    if (!end_of_word_suffix_.empty() && bytes.size() >= end_of_word_suffix_.size() &&
        bytes.substr(bytes.size() - end_of_word_suffix_.size()) == std::string_view(end_of_word_suffix_)) {
      bytes.remove_suffix(end_of_word_suffix_.size());
    }
    bool all_present = true;
    for (char byte : bytes) all_present = all_present && byte_ids_[static_cast<uint8_t>(byte)] >= 0;
    if (all_present && !bytes.empty()) {
      for (char byte : bytes) symbols.push_back(byte_ids_[static_cast<uint8_t>(byte)]);
      return;
    }
  }
  if (!unk_id_) return;  // no unknown token: the character is dropped, as in Hugging Face tokenizers
  if (fuse_unk_ && !symbols.empty() && symbols.back() == *unk_id_) return;
  symbols.push_back(*unk_id_);
}

std::vector<int32_t> BpeModel::merge_word(std::string_view word) const {
  std::vector<std::string_view> chars;
  utf8_for_each_char(word, [&](std::string_view piece) { chars.push_back(piece); });
  std::vector<int32_t> initial;
  initial.reserve(chars.size());
  std::string affixed;
  for (size_t i = 0; i < chars.size(); ++i) {
    bool add_prefix = i > 0 && !continuing_subword_prefix_.empty();
    bool add_suffix = i + 1 == chars.size() && !end_of_word_suffix_.empty();
    if (!add_prefix && !add_suffix) {
      append_char(chars[i], initial);
      continue;
    }
    affixed.clear();
    if (add_prefix) affixed += continuing_subword_prefix_;
    affixed += chars[i];
    if (add_suffix) affixed += end_of_word_suffix_;
    append_char(affixed, initial);
  }

  std::vector<Symbol> symbols(initial.size());
  std::priority_queue<MergeCandidate> queue;
  auto push_candidate = [&](int32_t pos) {
    int32_t next = symbols[pos].next;
    if (next < 0) return;
    auto it = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (size_t i = 0; i < initial.size(); ++i) {
    auto pos = static_cast<int32_t>(i);
    symbols[i] = {initial[i], pos - 1, i + 1 < initial.size() ? pos + 1 : -1, true};
  }
  for (size_t i = 0; i + 1 < initial.size(); ++i) push_candidate(static_cast<int32_t>(i));

  while (!queue.empty()) {
    MergeCandidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    // Stale candidates (one side already merged elsewhere) no longer name the current pair.
    auto it = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (it == merges_.end() || it->second.new_id != top.new_id || it->second.rank != top.rank) continue;
    Symbol& right = symbols[left.next];
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_candidate(left.prev);
    push_candidate(top.pos);
  }

  std::vector<int32_t> result;
  for (int32_t pos = symbols.empty() ? -1 : 0; pos >= 0; pos = symbols[pos].next) result.push_back(symbols[pos].id);
  return result;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = merge_word(word);
  ids.insert(ids.end(), merged.begin(), merged.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    // A full cache is simply emptied: cheap, and the hot words come back quickly.
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(merged));
  }
}

}  // namespace staticlm
