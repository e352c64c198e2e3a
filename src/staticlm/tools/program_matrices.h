// SPDX-License-Identifier: Apache-2.0
// The matrices a program's instructions read (the methods' kernel calls and the delegates whose
// blob is an instruction list, the cpu backend's method blobs), each stored matrix once: read
// from the instructions themselves, so they say what the kernels are given. `staticlm inspect`
// lists them; `staticlm bench` counts a decode step's bytes and multiply-adds from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "staticlm/core/tensor.h"
#include "staticlm/format/program_file.h"

namespace staticlm::cli {

struct ProgramMatrix {
  std::string name;                  // the constant's name, or the named data key
  Shape shape;                       // logical [N, K]
  std::string layout;                // rows, panel32, panel32_q8, panel32_q4
  std::string format;                // f32, bf16, q8_0, int8_g32, ...
  uint64_t bytes = 0;                // as stored
  std::vector<std::string> read_by;  // op names, in first-read order
  // The most rows of x any call multiplies it by: a prefill chunk's for the layers' matrices, 1
  // for a head that computes only the last row's logits.
  int64_t rows = 0;

  double bits_per_weight() const;
  // Whether only embeddings read it: a gather touches one row per token, not the matrix.
  bool gathered_only() const;
};

// By name. Instructions whose op or attributes do not parse are skipped (loading refuses them).
std::vector<ProgramMatrix> program_matrices(const ProgramFile& file);

// The bytes of the program's weights as stored: its constants and its named data (the delegates'
// packed matrices), all of it mapped from the file rather than allocated.
uint64_t program_weight_bytes(const ProgramFile& file);
// The bytes a session allocates for the methods' in-place inputs (the KV caches), one buffer per
// name however many methods take it.
uint64_t program_cache_bytes(const ProgramFile& file);

}  // namespace staticlm::cli
