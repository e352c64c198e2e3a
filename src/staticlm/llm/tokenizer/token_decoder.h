// SPDX-License-Identifier: Apache-2.0
// Decoders of a tokenizer.json ("decoder" field): turn the token strings of some ids back into
// text. They work on raw bytes: a byte-level or byte-fallback token may carry part of a
// character, and the caller (Tokenizer::decode, StreamingDecoder) repairs or buffers it.
// Supported types: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence (and null).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/json_fields.h"

namespace staticlm {

struct DecodePiece {
  std::string text;
  bool is_added = false;  // an added token: ByteLevel keeps it verbatim
};

class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  // Rewrites the pieces in place (a decoder may fuse them into fewer).
  virtual Status decode_chain(std::vector<DecodePiece>& pieces) const = 0;
};

// Builds the decoder described by `config` (null gives nullptr: pieces are joined with spaces).
// Fails with Unimplemented naming an unsupported type, InvalidArgument for a malformed one.
Result<std::unique_ptr<TokenDecoder>> make_token_decoder(const Json& config, std::string_view where);

}  // namespace staticlm
