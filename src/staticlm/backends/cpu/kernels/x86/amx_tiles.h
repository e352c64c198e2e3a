// SPDX-License-Identifier: Apache-2.0
// What the AMX kernels (linear_amx_bf16.cpp, linear_q_amx.cpp) share: the layout
// _tile_loadconfig reads, palette 1. Plain data: the files fill it and load it after their own
// target pragma.
#pragma once

#include <cstdint>

namespace staticlm::cpu::amx {

// Tile t has rows[t] rows of bytes_per_row[t] bytes; 0 leaves it unused.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Call right before _tile_loadconfig(&config). g++ 12's intrinsic hands ldtilecfg an operand of
// pointer size, so the compiler takes the rest of the config for unread and may drop its stores
// as dead (it did: the int8 kernel loaded a config of zero rows and faulted); this marks all 64
// bytes read.
inline void keep_written(const TileConfig& config) {
  __asm__ volatile("" : : "m"(config) : "memory");
}

}  // namespace staticlm::cpu::amx
