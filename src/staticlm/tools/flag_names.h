// SPDX-License-Identifier: Apache-2.0
// Library messages name parameters ("option 'prefill_len'", "max_new_tokens"); the CLI adds the
// flag that sets each, so a user reads what to change on the command line.
#pragma once

#include <span>
#include <string_view>
#include <utility>

#include "staticlm/core/status.h"

namespace staticlm::cli {

// `status` with the flag after each whole parameter name it holds, once, quotes kept:
// "option 'prefill_len' (--prefill-len)". The names are found in the message as the library wrote
// it, so a flag's own text ("--stride" holds "stride") is never matched again.
Status with_flag_names(const Status& status, std::span<const std::pair<std::string_view, std::string_view>> flags);

}  // namespace staticlm::cli
