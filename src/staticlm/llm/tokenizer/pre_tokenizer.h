// SPDX-License-Identifier: Apache-2.0
// Pre-tokenizers of a tokenizer.json ("pre_tokenizer" field): split a normalized piece of input
// into words that the model encodes independently.
// Supported types: ByteLevel, Split, Metaspace, Digits, Sequence (and null for none).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/json_fields.h"

namespace staticlm {

struct PreToken {
  std::string text;
  // True for the piece that begins at the very start of the input text: Metaspace's "first"
  // prepend scheme adds its replacement only there.
  bool at_input_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Rewrites `pieces` in place; empty pieces are dropped.
  virtual Status pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

// Builds the pre-tokenizer described by `config` (null gives nullptr). Fails with Unimplemented
// naming an unsupported type (and listing the supported ones), InvalidArgument for a malformed
// description or a regex that does not compile.
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& config, std::string_view where);

}  // namespace staticlm
