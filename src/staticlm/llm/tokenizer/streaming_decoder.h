// SPDX-License-Identifier: Apache-2.0
// StreamingDecoder: turns generated ids into text one id at a time, for printing tokens as they
// arrive. Each chunk it returns is valid UTF-8, and the concatenation of all chunks (including
// flush) equals tokenizer.decode(all ids, skip_special).
//
// It decodes a small window of ids (the last emitted token plus the pending ones) and emits only
// the new suffix, so leading-space rules that depend on a token's position (SentencePiece's
// first-piece space, Strip decoders) come out as in a full decode. While the window's bytes end
// in an unfinished character (a byte-fallback <0xE2> waiting for <0x82><0xAC>, or byte-level
// pieces of an emoji) nothing is emitted. With clean_up_tokenization_spaces a trailing space and
// the few bytes after it wait until the next id shows whether " 's" or " ." follows.
// The decoder borrows the tokenizer, which must outlive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

class StreamingDecoder {
 public:
  StreamingDecoder(const Tokenizer& tokenizer, bool skip_special);

  // Adds one id; returns the newly completed text (often empty). Fails with OutOfRange for an
  // id outside the vocabulary; the decoder is then unchanged.
  Result<std::string> feed(int32_t id);

  // Makes `context` (ids already shown: a prompt) what the next fed ids continue, emitting none
  // of it: a position-dependent rule then treats the first fed id as a continuation, so with
  // SentencePiece's Strip decoder "▁was" after "In the beginning" decodes to " was", not "was".
  void continue_after(std::span<const int32_t> context);

  // Emits whatever is still pending; an unfinished character at the very end becomes U+FFFD.
  // The decoder is then empty, as after reset.
  Result<std::string> flush();

  void reset();

 private:
  // The decoded window ids_[begin, end) with ill-formed UTF-8 repaired; `incomplete` tells
  // whether its bytes end inside a character.
  Result<std::string> window_text(size_t begin, size_t end, bool& incomplete) const;
  // Applies clean_up_tokenization (when the tokenizer uses it) to the stream of chunks, holding
  // back a tail that a later chunk could still change; `final` releases everything.
  std::string clean_up(std::string chunk, bool final);

  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // ids_[0..prefix_end_) were emitted before, for context only
  size_t prefix_end_ = 0;
  std::string held_;  // decoded text waiting for clean-up
};

}  // namespace staticlm
