// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a tokenizer.model (SentencePiece protobuf) as a checkpoint could ship it. Loading must
// refuse what is malformed with a Status; a model it accepts must encode and decode text.
#include <cstddef>
#include <cstdint>

#include "staticlm/llm/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tokenizer = staticlm::load_sentencepiece_model(std::span<const uint8_t>(data, size));
  if (!tokenizer.ok()) {
    return 0;
  }
  auto ids = (*tokenizer)->encode("In the beginning God created \xe2\x80\x94 the heaven.");
  if (ids.ok()) {
    (void)(*tokenizer)->decode(*ids, /*skip_special=*/true);
  }
  return 0;
}
