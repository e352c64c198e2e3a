// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/streaming_decoder.h"

#include <algorithm>

#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

// The part of `full` after the already emitted `prefix`. Decoders only append as ids are added;
// should one ever rewrite emitted text, that text cannot be taken back, so the rest from the next
// character boundary is returned.
std::string new_suffix(const std::string& full, const std::string& prefix) {
  if (full.compare(0, prefix.size(), prefix) == 0) return full.substr(prefix.size());
  size_t pos = std::min(prefix.size(), full.size());
  while (pos < full.size() && (static_cast<unsigned char>(full[pos]) & 0xC0) == 0x80) ++pos;
  return full.substr(pos);
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

void StreamingDecoder::reset() {
  ids_.clear();
  prefix_end_ = 0;
  held_.clear();
}

Result<std::string> StreamingDecoder::window_text(size_t begin, size_t end, bool& incomplete) const {
  std::span<const int32_t> window(ids_.data() + begin, end - begin);
  STATICLM_ASSIGN_OR_RETURN(std::string bytes, tokenizer_.decode_bytes(window, skip_special_));
  incomplete = utf8_incomplete_tail_length(bytes) > 0;
  return utf8_repair(bytes);
}

std::string StreamingDecoder::clean_up(std::string chunk, bool final) {
  if (!tokenizer_.clean_up_tokenization_spaces()) return chunk;
  held_ += chunk;
  // Every clean-up rule starts with a space and spans at most 4 bytes, so text is final once no
  // space lies within 3 bytes of its end; the rest waits for the next chunk.
  size_t cut = held_.size();
  if (!final) {
    bool moved = true;
    while (moved) {
      moved = false;
      for (size_t pos = cut >= 3 ? cut - 3 : 0; pos < cut; ++pos) {
        if (held_[pos] == ' ') {
          cut = pos;
          moved = true;
          break;
        }
      }
    }
  }
  std::string ready = clean_up_tokenization(std::string_view(held_).substr(0, cut));
  held_.erase(0, cut);
  return ready;
}

Result<std::string> StreamingDecoder::feed(int32_t id) {
  ids_.push_back(id);
  bool incomplete = false;
  Result<std::string> full = window_text(0, ids_.size(), incomplete);
  if (!full.ok()) {
    ids_.pop_back();
    return full.status();
  }
  if (incomplete) return std::string();
  bool prefix_incomplete = false;
  STATICLM_ASSIGN_OR_RETURN(std::string prefix, window_text(0, prefix_end_, prefix_incomplete));
  std::string chunk = clean_up(new_suffix(*full, prefix), false);

  // The next window starts at the last id that contributes text, so position-dependent rules
  // (the first piece loses its leading space) see the same neighbour as in a full decode; ids
  // that skip_special drops after it are kept too, being harmless.
  size_t last_visible = ids_.size();
  for (size_t i = ids_.size(); i > 0; --i) {
    if (!(skip_special_ && tokenizer_.is_special(ids_[i - 1]))) {
      last_visible = i - 1;
      break;
    }
  }
  if (last_visible == ids_.size()) {
    ids_.clear();  // nothing visible yet: no context needed
  } else {
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(last_visible));
  }
  prefix_end_ = ids_.size();
  return chunk;
}

void StreamingDecoder::continue_after(std::span<const int32_t> context) {
  reset();
  // The last id that shows text is all the context a window needs (as feed keeps it).
  for (size_t i = context.size(); i > 0; --i) {
    if (!(skip_special_ && tokenizer_.is_special(context[i - 1]))) {
      ids_.push_back(context[i - 1]);
      break;
    }
  }
  prefix_end_ = ids_.size();
}

Result<std::string> StreamingDecoder::flush() {
  bool incomplete = false;
  STATICLM_ASSIGN_OR_RETURN(std::string full, window_text(0, ids_.size(), incomplete));
  bool prefix_incomplete = false;
  STATICLM_ASSIGN_OR_RETURN(std::string prefix, window_text(0, prefix_end_, prefix_incomplete));
  std::string chunk = clean_up(new_suffix(full, prefix), true);
  reset();
  return chunk;
}

}  // namespace staticlm
