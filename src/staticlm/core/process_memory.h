// SPDX-License-Identifier: Apache-2.0
// Peak resident set size of this process, for run statistics and export measurements.
#pragma once

#include <cstdint>

namespace staticlm {

// Bytes; 0 when the platform cannot tell.
uint64_t peak_rss_bytes();

}  // namespace staticlm
