// SPDX-License-Identifier: Apache-2.0
// Normalizers of a tokenizer.json ("normalizer" field): text-to-text rewrites applied to each
// piece of input between added tokens, before pre-tokenization.
// Supported types: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents,
// Sequence (and null for none).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/json_fields.h"
#include "staticlm/llm/tokenizer/regex.h"

namespace staticlm {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8; so is the result.
  virtual Result<std::string> normalize(std::string text) const = 0;
};

// Builds the normalizer described by `config` (null gives nullptr: no normalization). `where`
// names it in messages ("normalizer", "normalizer.normalizers[1]"). Fails with Unimplemented for
// a type this build does not support (the message lists the supported ones) and InvalidArgument
// for a malformed description.
Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& config, std::string_view where);

// Reads a {"String": ...} / {"Regex": ...} pattern member (shared with pre-tokenizers, decoders).
Result<TextPattern> read_text_pattern(const Json& object, std::string_view key, std::string_view where);

}  // namespace staticlm
