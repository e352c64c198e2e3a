// SPDX-License-Identifier: Apache-2.0
// Post-processors of a tokenizer.json ("post_processor" field), reduced to what a single-sequence
// encode needs: the special-token ids placed before and after the sequence when
// add_special_tokens is set. Supported types: TemplateProcessing, ByteLevel (adds nothing),
// RobertaProcessing and BertProcessing (cls ... sep), Sequence (and null).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/bpe_model.h"  // kMaxTokenId
#include "staticlm/llm/tokenizer/json_fields.h"

namespace staticlm {

struct SpecialTokenTemplate {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

// Reads `config` (null gives an empty template). Fails with Unimplemented for an unsupported type, InvalidArgument
// for a malformed one (a template naming a special token it does not define, ...).
Result<SpecialTokenTemplate> read_post_processor(const Json& config, std::string_view where);

}  // namespace staticlm
