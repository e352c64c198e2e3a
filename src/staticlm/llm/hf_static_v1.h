// The hf_static v1 contract (docs/hf_static_v1.md): validation of a program against it and the
// session that drives its prefill and decode methods over runner-owned KV caches.
#pragma once

#include <memory>

#include "staticlm/core/result.h"
#include "staticlm/llm/contract.h"

namespace staticlm {

// The contract's view of a program's metadata, read and range-checked.
struct HfStaticConfig {
  int64_t vocab_size = 0;
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_cache_len = 0;
  int64_t prefill_len = 0;
  DType cache_dtype = DType::kF32;
  bool kv_returned = false;
  bool logits_last = false;

  // Fails with InvalidArgument naming the metadata key.
  static Result<HfStaticConfig> from_program(const ProgramFile& file);
};

std::unique_ptr<LlmContract> make_hf_static_v1_contract();

}  // namespace staticlm
