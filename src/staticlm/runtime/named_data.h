// SPDX-License-Identifier: Apache-2.0
// NamedDataMap: data a program stores once under a key (format: Program.named_data) and every
// method's delegates read by that key, like ExecuTorch's NamedDataMap. A backend that packs
// weights at export stores each packed tensor once; the prefill and the decode delegate then
// both get the same mapped bytes at init, with no copy and no repacking.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "staticlm/core/result.h"

namespace staticlm {

class NamedDataMap {
 public:
  virtual ~NamedDataMap() = default;
  // The bytes stored under `key`, borrowed for the map's lifetime. Fails with NotFound naming the
  // key when there is none.
  virtual Result<std::span<const uint8_t>> get(std::string_view key) const = 0;
};

}  // namespace staticlm
