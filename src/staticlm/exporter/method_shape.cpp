// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/method_shape.h"

#include "staticlm/contracts/hf_static_v1_spec.h"

namespace staticlm {

std::string_view kv_update_form_name(KvUpdateForm form) {
  return form == KvUpdateForm::kInPlace ? hf_static_v1::kKvUpdateInPlace : hf_static_v1::kKvUpdateReturned;
}

std::string_view logits_mode_name(LogitsMode mode) {
  return mode == LogitsMode::kAll ? hf_static_v1::kLogitsAll : hf_static_v1::kLogitsLast;
}

}  // namespace staticlm
