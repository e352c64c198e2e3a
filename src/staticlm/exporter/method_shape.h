// SPDX-License-Identifier: Apache-2.0
// The shape of one hf_static method's graph: its chunk length, cache, how it updates the caches
// and which logits it outputs (docs/hf_static_v1.md).
#pragma once

#include <cstdint>
#include <string_view>

#include "staticlm/core/dtype.h"

namespace staticlm {

enum class KvUpdateForm { kInPlace, kReturned };
// kLast: logits of each chunk's last row only; the last layer narrows to that row after its
// attention, so its o_proj, MLP, the final norm and the head multiply one row.
enum class LogitsMode { kAll, kLast };

std::string_view kv_update_form_name(KvUpdateForm form);
std::string_view logits_mode_name(LogitsMode mode);

struct DecoderMethodShape {
  int64_t seq_len = 1;
  int64_t cache_len = 0;
  DType cache_dtype = DType::kF32;
  KvUpdateForm kv_update = KvUpdateForm::kInPlace;
  LogitsMode logits = LogitsMode::kAll;
  // The embeddings method: outputs every row's final-normed hidden state instead of the logits.
  bool hidden_states = false;
};

}  // namespace staticlm
