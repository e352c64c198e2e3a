// SPDX-License-Identifier: Apache-2.0
// The hf_static v1 contract (docs/hf_static_v1.md; names and rules in
// contracts/hf_static_v1_spec.h): validation of a program file against it, and the session that
// drives its prefill and decode methods over session-owned KV caches.
#pragma once

#include <memory>

#include "staticlm/llm/contract.h"

namespace staticlm {

std::unique_ptr<LlmContract> make_hf_static_v1_contract();

}  // namespace staticlm
