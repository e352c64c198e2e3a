// SPDX-License-Identifier: Apache-2.0
// SHA-256 over a sequence of byte ranges (OpenSSL's libcrypto), as lowercase hex.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm {

Result<std::string> sha256_hex(std::span<const std::span<const uint8_t>> pieces);

}  // namespace staticlm
